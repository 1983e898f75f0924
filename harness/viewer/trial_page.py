"""One trial, as a person debugging it wants to read it (``templates/trial.html.j2``).

Top to bottom: the verdict and its reasons; the facts needed to replay it (seed, image id,
attempts) and what it cost (tokens, dollars, seconds); the grader evidence (a state diff as
a colour-coded table of path, before, expected and actual; trajectory rules with the step
each was reached or broken at); then the transcript, one block per trajectory event, with
full tool results read from the blobs table by reference and rule violations marked at
their step; after the evidence, people's labels of the trial and the form to add one. This module arranges the store's rows for the template, which escapes them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, cast

from graders.base import VerdictJson
from harness.release.run_config import StoredTask
from harness.report.render.numbers import money, num, pretty_json
from harness.report.render.templating import render_template
from harness.viewer.contexts import DiffRow, EventView, GraderView, PairwiseView, ShownValue
from harness.viewer.labelling import LabelForm

BLOB_DISPLAY_LIMIT = 200_000
DIFF_KINDS = (
    ("missing_changes", "missing", "missing change"),
    ("wrong_values", "wrong", "wrong value"),
    ("side_effects", "side", "unexpected change"),
)


def _val(v: object) -> ShownValue:
    if v is None:
        return {"absent": True}
    text = json.dumps(v, default=str, ensure_ascii=False, sort_keys=True)
    return {"absent": False, "text": text[:400] + "…" if len(text) > 400 else text}


def _objects(value: object) -> list[dict[str, object]]:
    """The JSON objects in a list taken from free-form grader details (others skipped)."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def diff_rows(details: Mapping[str, object]) -> list[DiffRow]:
    """The state diff of one state_diff verdict: one row per differing path."""
    rows: list[DiffRow] = []
    for key, cls, label in DIFF_KINDS:
        for item in _objects(details.get(key)):
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
            rows.append(
                {
                    "cls": cls,
                    "label": label,
                    "path": item.get("path"),
                    "before": _val(before),
                    "expected": _val(expected),
                    "actual": _val(actual),
                    "unchanged": key == "side_effects",
                }
            )
    return rows


def _steps(o: Mapping[str, object]) -> str:
    steps = o.get("steps")
    return " / ".join(
        "—" if s is None else f"step {s}" for s in (steps if isinstance(steps, list) else [])
    )


def grader_context(g: VerdictJson) -> GraderView:
    """One grader verdict: reasons, its state diff or trajectory rules, and raw details."""
    d = g.get("details") or {}
    patched = d.get("patched_paths") or []
    patched_text = ""
    if patched:
        patched_text = ", ".join(patched[:30]) + (" …" if len(patched) > 30 else "")
        if d.get("ignore"):
            patched_text += f"; ignored: {', '.join(d.get('ignore') or [])}"
    score = g.get("score")
    tool_rows, tool_limits = _judge_tools(d)
    return {
        "name": g.get("grader"),
        "passed": g.get("passed"),
        "role": g.get("role", ""),
        "version": g.get("version", ""),
        "score": score if isinstance(score, int | float) else None,
        "reasons": g.get("reasons") or [],
        "has_diff": any(k in d for k, _, _ in DIFF_KINDS),
        "diff_rows": diff_rows(d),
        "diff_mode": d.get("mode", "full"),
        "patched": patched_text,
        "has_rules": any(k in d for k in ("required", "order", "forbidden")),
        "required": _objects(d.get("required")),
        "order": [{**o, "steps": _steps(o)} for o in _objects(d.get("order"))],
        "forbidden": [
            {**h, "args": json.dumps(h.get("args"), default=str)}
            for h in _objects(d.get("forbidden"))
        ],
        "judge_tools": tool_rows,
        "judge_limits": tool_limits,
        "raw": pretty_json(d) if d else "",
    }


def _judge_tools(details: Mapping[str, object]) -> tuple[list[dict[str, object]], list[str]]:
    """A judge's exploration of the workspace (``details.judge.tools``, one entry per
    sample): its calls as rows and the caps it hit."""
    judge = details.get("judge")
    samples = _objects(judge.get("tools")) if isinstance(judge, dict) else []
    rows = [
        {**c, "sample": s.get("sample"), "args": json.dumps(c.get("args"), default=str)}
        for s in samples
        for c in _objects(s.get("calls"))
    ]
    hit = [s.get("limits_hit") for s in samples]
    limits = sorted({str(x) for h in hit if isinstance(h, list) for x in h})
    return rows, limits


def violations_by_step(
    graders: list[VerdictJson], evidence: Mapping[str, object]
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
    for h in _objects(evidence.get("harms")):
        step = h.get("step")
        if isinstance(step, int):
            msg = f"forbidden action '{h.get('action')}' (severity {h.get('severity')})"
            if not any(msg in m for m in out[step]):
                out[step].append(msg)
    return out


def event_context(ev, violations: list[str], blob: str | None) -> EventView:
    """One trajectory event: kind, tool call, tokens/cost/time, content, full result."""
    kind = ev.kind or "event"
    classes = [f"event k-{kind}"]
    if not ev.ok:
        classes.append("notok")
    if violations:
        classes.append("violation")
    meta = []
    if not ev.ok:
        meta.append("error")
    if isinstance(ev.args, dict) and ev.args.get("usage_reported") is False:
        meta.append("tokens unknown (no usage reported)")
    elif ev.tokens_in or ev.tokens_out:
        meta.append(f"{ev.tokens_in:,} in / {ev.tokens_out:,} out tokens")
    if ev.cost_usd:
        meta.append(money(ev.cost_usd))
    if ev.latency_s:
        meta.append(f"{ev.latency_s:.2f} s")
    is_call = kind == "tool_call" or bool(ev.tool)
    return {
        "step": ev.step,
        "kind": kind,
        "classes": " ".join(classes),
        "tool": (ev.tool or "") if is_call else None,
        "args": json.dumps(ev.args or {}, default=str, ensure_ascii=False) if is_call else "",
        "meta": " · ".join(meta),
        "violations": violations,
        "content": ev.content or "",
        "blob_ref": ev.blob_ref,
        "blob": None if blob is None else blob[:BLOB_DISPLAY_LIMIT],
        "blob_len": 0 if blob is None else len(blob),
        "blob_more": (
            " (first 200,000 characters shown)"
            if blob is not None and len(blob) > BLOB_DISPLAY_LIMIT
            else ""
        ),
    }


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
        return sorted(s.exec(q), key=lambda a: a.attempt)


def image_fact(t) -> str:
    """The image the trial ran, and the task image under it when an agent CLI was added."""
    if t.task_image_id and t.image_id and t.task_image_id != t.image_id:
        return f"{t.image_id} (task image {t.task_image_id} + agent CLI)"
    return t.image_id or "—"


def facts(t) -> list[list[tuple[str, Any, str]]]:
    """(label, value, kind) pairs in two columns; kind is 'text', 'badge' or 'code'."""
    rows = [
        ("status", t.status, "badge"),
        ("failure kind", failure_kind_fact(t), "code" if t.failure_kind else "text"),
        ("score", num(t.score), "text"),
        ("arm", t.arm, "text"),
        ("task", t.task_id + (f" · variant {t.variant}" if t.variant else ""), "text"),
        ("class / cluster", f"{t.task_class or ''} / {t.cluster or ''}", "text"),
        ("trial index", t.trial_index, "text"),
        ("seed", t.seed, "code"),
        ("image id", image_fact(t), "code"),
        ("attempts", t.attempts, "text"),
        ("tokens", tokens_fact(t), "text"),
        ("cost", money(t.cost_usd) if t.cost_usd is not None else "unknown", "text"),
        ("latency", f"{t.latency_s:.2f} s", "text"),
        ("steps / model calls", f"{t.steps} / {t.model_calls}", "text"),
        ("malformed tool calls", num(t.malformed_tool_calls), "text"),
        ("confidence", num(t.confidence), "text"),
        ("harm severity", num(t.harm_severity), "text"),
        (
            "grader versions",
            ", ".join(f"{k} v{v}" for k, v in (t.grader_versions or {}).items()),
            "text",
        ),
        ("started / finished", f"{t.started_at} / {t.finished_at}", "text"),
    ]
    half = (len(rows) + 1) // 2
    return [rows[:half], rows[half:]]


def failure_kind_fact(t) -> str:
    """How the agent failed: the kind of an agent fault (timeout, invalid_agent_result ...),
    else what the verdict says. A trial the graders failed (a forbidden action included) is
    the agent's failure too; only an unresolved trial is not."""
    if t.failure_kind:
        return str(t.failure_kind)
    if t.status == "passed":
        return "—"
    if t.status == "failed":
        harms = (t.evidence or {}).get("harms") if isinstance(t.evidence, dict) else None
        if harms or (t.harm_severity or 0) > 0:
            return "— (failed by its graders: a forbidden action)"
        return "— (failed by its graders)"
    return f"— (no verdict: {t.status}; not the agent's failure)"


def tokens_fact(t) -> str:
    """The trial's tokens, or why they are unknown (never shown as 0)."""
    if t.tokens_in is None or t.tokens_out is None:
        return "unknown (the model endpoint reported no usage)"
    return f"{t.tokens_in:,} in ({t.tokens_cached or 0:,} cached) / {t.tokens_out:,} out"


def pairwise_views(store, trial_id: int) -> list[PairwiseView]:
    """The pairwise judgements of this trial (``harness pairwise``), from its side: which
    response the judge saw first and which it named better."""
    from harness.store.pairwise import trial_judgements

    out: list[PairwiseView] = []
    for j in trial_judgements(store.engine, trial_id):
        mine = "A" if j.trial_a == trial_id else "B"
        side = {mine: "this", ("B" if mine == "A" else "A"): "other"}
        other_arm = j.arm_b if mine == "A" else j.arm_a
        if j.run_b is not None:  # across runs: the other side is named by its run too
            other_arm = f"{j.run_b if mine == 'A' else j.run_id}:{other_arm}"
        out.append(
            {
                "other_arm": other_arm,
                "other_trial": j.trial_b if mine == "A" else j.trial_a,
                "shown_first": side[j.shown_first],
                "verdict": side.get(j.verdict, j.verdict),
                "reason": j.reason,
                "setup": j.setup,
                "cost": money(j.cost_usd),
            }
        )
    return out


def render_trial(store, trial_id: int, form: LabelForm | None = None) -> str | None:
    """The trial page, or None if there is no such trial; ``form``: the label form to show
    (its token, and after a rejected POST its message and values)."""
    from harness.release.source import stored_config
    from harness.viewer.labelling import judge_criteria, labels_view, next_to_label

    t = store.trial(trial_id)
    if t is None:
        return None
    run = store.get_run(t.run_id)
    evidence: Mapping[str, object] = t.evidence or {}
    # Stored by ``harness.trial`` as ``Verdict.to_json()`` records.
    graders = [cast(VerdictJson, g) for g in _objects(evidence.get("graders"))]
    task_spec: StoredTask = {}
    if run is not None and isinstance(run.config, dict):
        task_spec = (stored_config(run).get("tasks") or {}).get(t.task_id) or {}
    marks = violations_by_step(graders, evidence)
    events = []
    for ev in store.events(trial_id):
        blob = None
        if ev.blob_ref:
            data = store.blob(ev.blob_ref)
            blob = data.decode("utf-8", errors="replace") if data is not None else None
        events.append(event_context(ev, marks.get(ev.step, []), blob))
    return render_template(
        "trial.html.j2",
        packages=("harness.viewer",),
        title=f"trial {trial_id}",
        trial=t,
        instruction=task_spec.get("instruction"),
        facts=facts(t),
        failure=evidence.get("failure"),
        info=pretty_json(evidence["info"]) if evidence.get("info") else "",
        graders=[grader_context(g) for g in graders],
        attempts=_attempts(store, t),
        events=events,
        labels=labels_view(store.engine, trial_id),
        pairwise=pairwise_views(store, trial_id),
        criteria=judge_criteria(graders),
        form=form,
        next_to_label=(
            next_to_label(store.engine, t.run_id, trial_id, form.labeller) if form else None
        ),
    )
