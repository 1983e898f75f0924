"""One trial, as a person debugging it wants to read it.

Top to bottom: the verdict and its reasons; the facts needed to replay it (seed, image id,
attempts) and what it cost (tokens, dollars, seconds); the grader evidence (a state diff as
a colour-coded table of path, before, expected and actual; trajectory rules with the step
each was reached or broken at); then the transcript, one block per trajectory event, with
full tool results read from the blobs table by reference and rule violations marked at
their step.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from harness.report.render.page import badge, e, money, num, pretty_json

BLOB_DISPLAY_LIMIT = 200_000
DIFF_KINDS = (
    ("missing_changes", "missing", "missing change"),
    ("wrong_values", "wrong", "wrong value"),
    ("side_effects", "side", "unexpected change"),
)


def _val(v: Any) -> str:
    if v is None:
        return '<span class="muted">absent</span>'
    text = json.dumps(v, default=str, ensure_ascii=False, sort_keys=True)
    if len(text) > 400:
        text = text[:400] + "…"
    return f"<code>{e(text)}</code>"


def state_diff_table(details: dict[str, Any]) -> str:
    """The state diff of one state_diff verdict: one row per differing path."""
    rows = []
    for key, cls, label in DIFF_KINDS:
        for item in details.get(key) or []:
            if not isinstance(item, dict):
                continue
            if key == "missing_changes":
                before, expected, actual = (
                    item.get("actual"),
                    item.get("expected"),
                    item.get("actual"),
                )
            elif key == "wrong_values":
                before, expected, actual = (
                    item.get("before"),
                    item.get("expected"),
                    item.get("actual"),
                )
            else:  # a side effect: the path was expected to keep its initial value
                before, expected, actual = item.get("before"), item.get("before"), item.get("after")
            expected_html = _val(expected) + (
                ' <span class="muted">(unchanged)</span>' if key == "side_effects" else ""
            )
            rows.append(
                f'<tr class="{cls}"><td>{e(label)}</td><td class="path">{e(item.get("path"))}</td>'
                f'<td>{_val(before)}</td><td class="exp">{expected_html}</td>'
                f'<td class="act">{_val(actual)}</td></tr>'
            )
    if not rows:
        mode = details.get("mode", "full")
        return f'<p class="muted">No differences: the final state matches (mode: {e(mode)}).</p>'
    return (
        '<table class="diff state-diff"><thead><tr><th>kind</th><th>path</th><th>before</th>'
        "<th>expected</th><th>actual</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def trajectory_rules(details: dict[str, Any]) -> str:
    parts = []
    req = [r for r in details.get("required") or [] if isinstance(r, dict)]
    if req:
        rows = "".join(
            f"<tr><td>{e(r.get('label'))}</td><td><code>{e(r.get('action'))}</code></td>"
            + (
                f'<td><a href="#step-{e(r["step"])}">step {e(r["step"])}</a></td></tr>'
                if r.get("step") is not None
                else '<td><span class="badge st-failed">never reached</span></td></tr>'
            )
            for r in req
        )
        parts.append(
            "<h4>Required actions</h4><table><thead><tr><th>label</th><th>action</th>"
            f"<th>first reached</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    order = [o for o in details.get("order") or [] if isinstance(o, dict)]
    if order:
        rows = "".join(
            f"<tr><td>{e(o.get('before'))} → {e(o.get('after'))}</td>"
            + (
                '<td><span class="badge st-passed">holds</span></td>'
                if o.get("holds")
                else '<td><span class="badge st-failed">violated</span></td>'
            )
            + f"<td>{e(' / '.join('—' if s is None else f'step {s}' for s in (o.get('steps') or [])))}</td></tr>"
            for o in order
        )
        parts.append(
            "<h4>Order (partial)</h4><table><thead><tr><th>before → after</th><th>holds</th>"
            f"<th>steps</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    harms = [h for h in details.get("forbidden") or [] if isinstance(h, dict)]
    if harms:
        rows = "".join(
            f'<tr class="wrong"><td>{e(h.get("action"))}</td>'
            f'<td><a href="#step-{e(h.get("step"))}">step {e(h.get("step"))}</a></td>'
            f"<td>{e(h.get('severity'))}</td><td><code>{e(h.get('tool'))}</code> "
            f"<code>{e(json.dumps(h.get('args'), default=str))}</code></td></tr>"
            for h in harms
        )
        parts.append(
            '<h4>Forbidden actions taken</h4><table class="diff"><thead><tr><th>rule</th>'
            f"<th>step</th><th>severity</th><th>call</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts)


def violations_by_step(
    graders: list[dict[str, Any]], evidence: dict[str, Any]
) -> dict[int, list[str]]:
    """step -> what went wrong there (forbidden actions, order violations)."""
    out: dict[int, list[str]] = defaultdict(list)
    for g in graders:
        d = g.get("details") or {}
        name = g.get("grader", "")
        for h in d.get("forbidden") or []:
            if isinstance(h, dict) and isinstance(h.get("step"), int):
                out[h["step"]].append(
                    f"{name}: forbidden action '{h.get('action')}' (severity {h.get('severity')})"
                )
        for o in d.get("order") or []:
            if isinstance(o, dict) and not o.get("holds"):
                steps = o.get("steps") or [None, None]
                if len(steps) == 2 and isinstance(steps[1], int):
                    out[steps[1]].append(
                        f"{name}: order violated, '{o.get('after')}' before '{o.get('before')}'"
                    )
    for h in evidence.get("harms") or []:
        if isinstance(h, dict) and isinstance(h.get("step"), int):
            msg = f"forbidden action '{h.get('action')}' (severity {h.get('severity')})"
            if not any(msg in m for m in out[h["step"]]):
                out[h["step"]].append(msg)
    return out


def grader_block(g: dict[str, Any]) -> str:
    d = g.get("details") or {}
    passed = g.get("passed")
    reasons = "".join(f"<li>{e(r)}</li>" for r in g.get("reasons") or [])
    body = ""
    if any(k in d for k, _, _ in DIFF_KINDS):
        body += state_diff_table(d)
        if d.get("patched_paths"):
            body += (
                f'<p class="muted small">expected changes: {e(", ".join(d["patched_paths"][:30]))}'
                + (" …" if len(d["patched_paths"]) > 30 else "")
                + (f"; ignored: {e(', '.join(d.get('ignore') or []))}" if d.get("ignore") else "")
                + "</p>"
            )
    if any(k in d for k in ("required", "order", "forbidden")):
        body += trajectory_rules(d)
    if d:
        body += f"<details><summary>raw details</summary><pre>{e(pretty_json(d))}</pre></details>"
    score = g.get("score")
    return (
        f'<div class="grader" data-grader="{e(g.get("grader"))}">'
        f"<h3>{badge('passed' if passed else 'failed')} {e(g.get('grader'))} "
        f'<span class="muted small">{e(g.get("role", ""))} · v{e(g.get("version", ""))}'
        f"{' · score ' + num(score) if isinstance(score, int | float) else ''}</span></h3>"
        f'<ul class="reasons">{reasons}</ul>{body}</div>'
    )


def event_block(ev, violations: list[str], blob: str | None) -> str:
    kind = ev.kind or "event"
    classes = [f"event k-{kind}"]
    if not ev.ok:
        classes.append("notok")
    if violations:
        classes.append("violation")
    if kind == "tool_call" or ev.tool:
        args = json.dumps(ev.args or {}, default=str, ensure_ascii=False)
        head = f"<code>{e(ev.tool)}</code>(<code>{e(args)}</code>)"
    else:
        head = ""
    meta = []
    if not ev.ok:
        meta.append("error")
    if ev.tokens_in or ev.tokens_out:
        meta.append(f"{ev.tokens_in:,} in / {ev.tokens_out:,} out tokens")
    if ev.cost_usd:
        meta.append(money(ev.cost_usd))
    if ev.latency_s:
        meta.append(f"{ev.latency_s:.2f} s")
    viol = "".join(f'<div class="viol">⚠ {e(v)}</div>' for v in violations)
    content = ""
    if ev.content:
        content = f"<pre>{e(ev.content)}</pre>"
    if ev.blob_ref:
        if blob is not None:
            shown = blob[:BLOB_DISPLAY_LIMIT]
            more = " (first 200,000 characters shown)" if len(blob) > BLOB_DISPLAY_LIMIT else ""
            content += (
                f"<details><summary>full result ({len(blob):,} characters, blob "
                f'<a href="/blob/{e(ev.blob_ref)}">{e(ev.blob_ref[:12])}</a>){more}</summary>'
                f"<pre>{e(shown)}</pre></details>"
            )
        else:
            content += (
                f'<p class="muted">full result: blob {e(ev.blob_ref[:12])} not in the store</p>'
            )
    return (
        f'<div class="{" ".join(classes)}" id="step-{ev.step}" data-step="{ev.step}">'
        f'<div class="head">#{ev.step} · {e(kind)}{" · " + head if head else ""} '
        f'<span class="muted small">{e(" · ".join(meta))}</span></div>{viol}{content}</div>'
    )


def _attempts(store, t) -> list:
    """This trial's attempts (one query on its key, not the run's whole attempts table)."""
    from sqlmodel import Session, select

    from harness.store.tables import Attempt

    with Session(store.engine) as s:
        q = select(Attempt).where(
            Attempt.run_id == t.run_id,
            Attempt.arm == t.arm,
            Attempt.task_id == t.task_id,
            Attempt.trial_index == t.trial_index,
            Attempt.variant == (t.variant or ""),
        )
        return list(s.exec(q))


def render_trial(store, trial_id: int) -> str | None:
    """The trial page body (without the page shell), or None if there is no such trial."""
    t = store.trial(trial_id)
    if t is None:
        return None
    run = store.get_run(t.run_id)
    events = store.events(trial_id)
    attempts = _attempts(store, t)
    evidence = t.evidence or {}
    graders = [g for g in evidence.get("graders") or [] if isinstance(g, dict)]
    task_spec = {}
    if run is not None and isinstance(run.config, dict):
        task_spec = (run.config.get("tasks") or {}).get(t.task_id) or {}

    facts = [
        ("status", badge(t.status)),
        ("score", e(num(t.score))),
        ("arm", e(t.arm)),
        ("task", e(t.task_id) + (f" · variant {e(t.variant)}" if t.variant else "")),
        ("class / cluster", f"{e(t.task_class)} / {e(t.cluster)}"),
        ("trial index", e(t.trial_index)),
        ("seed", f"<code>{e(t.seed)}</code>"),
        ("image id", f"<code>{e(t.image_id or '—')}</code>"),
        ("attempts", e(t.attempts)),
        (
            "tokens",
            f"{t.tokens_in:,} in ({t.tokens_cached:,} cached) / {t.tokens_out:,} out",
        ),
        ("cost", e(money(t.cost_usd)) if t.cost_usd is not None else "unknown"),
        ("latency", f"{t.latency_s:.2f} s"),
        ("steps / model calls", f"{t.steps} / {t.model_calls}"),
        ("confidence", e(num(t.confidence))),
        ("harm severity", e(num(t.harm_severity))),
        (
            "grader versions",
            e(", ".join(f"{k} v{v}" for k, v in (t.grader_versions or {}).items())),
        ),
        ("started / finished", f"{e(t.started_at)} / {e(t.finished_at)}"),
    ]
    half = (len(facts) + 1) // 2
    facts_html = "".join(
        '<div><table class="kv">'
        + "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in chunk)
        + "</table></div>"
        for chunk in (facts[:half], facts[half:])
    )

    parts = [
        f'<nav class="crumbs"><a href="/">runs</a> / <a href="/run/{e(t.run_id)}">{e(t.run_id)}</a>'
        f' / <a href="/run/{e(t.run_id)}/trials?task={e(t.task_id)}">{e(t.task_id)}</a> / trial {t.id}</nav>',
        f"<h1>Trial {t.id}: {e(t.task_id)} · {e(t.arm)} · #{t.trial_index} {badge(t.status)}</h1>",
    ]
    if t.reason:
        parts.append(f'<p id="reason">{e(t.reason)}</p>')
    if task_spec.get("instruction"):
        parts.append(f"<h3>Instruction</h3><pre>{e(task_spec['instruction'])}</pre>")
    parts.append(f'<div class="cards">{facts_html}</div>')
    if t.error:
        parts.append(f"<h2>Error</h2><pre>{e(t.error)}</pre>")
    if evidence.get("failure"):
        parts.append(f"<h2>Agent failure</h2><pre>{e(evidence['failure'])}</pre>")

    parts.append('<section id="evidence"><h2>Grader evidence</h2>')
    if graders:
        parts.extend(grader_block(g) for g in graders)
    else:
        parts.append('<p class="muted">No grader verdicts (the trial ended before grading).</p>')
    if t.answer:
        parts.append(f"<h3>Final answer</h3><pre>{e(t.answer)}</pre>")
    if evidence.get("info"):
        parts.append(
            f"<details><summary>agent info</summary><pre>{e(pretty_json(evidence['info']))}</pre></details>"
        )
    parts.append("</section>")

    if attempts:
        rows = "".join(
            f"<tr><td>{a.attempt}</td><td>{badge(a.outcome)}</td><td>{e(a.started_at)}</td>"
            + (f"<td><pre>{e(a.error[-2000:])}</pre></td></tr>" if a.error else "<td></td></tr>")
            for a in sorted(attempts, key=lambda a: a.attempt)
        )
        parts.append(
            "<h2>Attempts</h2><table><thead><tr><th>#</th><th>outcome</th><th>started</th>"
            f"<th>error</th></tr></thead><tbody>{rows}</tbody></table>"
        )

    marks = violations_by_step(graders, evidence)
    parts.append(f'<section id="transcript"><h2>Transcript ({len(events)} events)</h2>')
    if not events:
        parts.append('<p class="muted">No trajectory events were recorded.</p>')
    for ev in events:
        blob = None
        if ev.blob_ref:
            data = store.blob(ev.blob_ref)
            blob = data.decode("utf-8", errors="replace") if data is not None else None
        parts.append(event_block(ev, marks.get(ev.step, []), blob))
    parts.append("</section>")
    return "".join(parts)
