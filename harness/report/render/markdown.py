"""Render report data as Markdown (for a pull-request comment or a release ticket)."""

from __future__ import annotations

from harness.release.records import GateResult
from harness.report.causes import causes_lines
from harness.report.records import NO_VERSIONS, ArmReport, Report, StepProgress
from harness.report.render.fmt import (
    comparison_notes,
    denominator_text,
    fit_check_text,
    fit_text,
    interval_text,
    latency_text,
    must_never_lines,
    noise_floor_text,
    pair_table_text,
    retry_text,
    select_ks,
    spend_text,
    tokens_text,
    unresolved_by_class_text,
)
from harness.report.render.judging import judge_markdown
from harness.report.render.measures import measures_lines
from harness.report.render.numbers import (
    ci,
    delta_text,
    money,
    money_interval,
    pct,
    rate_text,
)
from harness.report.render.pairwise import pairwise_markdown
from harness.report.render.subset import subset_lines
from harness.report.render.summary import gate_rule_text, gate_text

CLUSTER_ROWS = 10


def _steps(steps: list[StepProgress]) -> list[str]:
    """The multi-step tasks' per-step table."""
    return [
        "",
        "### Steps (multi-step tasks)",
        "",
        "| arm | task | step | reached | passed | mean reward |",
        "|---|---|---|---|---|---|",
    ] + [
        f"| {r['arm']} | {r['task']} | {r['index']}. {r['step']} | {r['reached']}/{r['trials']} "
        f"| {r['passed']}/{r['trials']} {pct(r['rate'])} [{pct(r['lo'])}, {pct(r['hi'])}] "
        f"| {r['mean_reward']:.2f} |"
        for r in steps
    ]


def render_markdown(report: Report, gate: GateResult | str | None = None) -> str:
    """The whole report as Markdown; ``gate``: the gate's result (or that it could not be
    evaluated) when the suite declares a gate, printed after the primary comparison."""
    run = report["run"]
    s = report.get("settings", {})
    lines = [
        f"## Run `{run['id']}` — suite `{run['suite']}`",
        "",
        f"Status {run['status']} · sandbox {run['sandbox']} · harness {run['harness_version']} "
        f"· config `{str(run['config_hash'])[:12]}` · seed {run['seed']}",
        "",
        f"*Estimand:* {report['estimand']}. *Sampling unit:* {report['sampling_unit']}. "
        f"*Intervals:* {pct(s.get('confidence', 0.95), 0)}. "
        f"*Denominator:* {denominator_text(report)}.",
        "",
        "| arm | tasks | clusters | trials sched / done / unresolved | success (CI, n) "
        "| interval method | unstable tasks | crash rate |",
        "| --- | ---: | ---: | --- | --- | --- | ---: | --- |",
    ]
    for name, a in report["arms"].items():
        crash = (a.get("infra") or {}).get("crash_rate")
        lines.append(
            f"| {name} | {a['tasks']} | {a['clusters']} | {a['trials_scheduled']} / "
            f"{a['trials_completed']} / {a['trials_unresolved']} | {rate_text(a['success'])} "
            f"| {(a.get('success') or {}).get('method', '—')} | {a.get('unstable_tasks', '—')} "
            f"| {rate_text(crash, 'attempt') if crash else '—'} |"
        )
    if subset := subset_lines(report):
        head = f"*{subset[0].rstrip(':')}*"
        lines += ["", "### Full suite (subset run)", "", head, ""]
        lines += [f"- {x.strip()}" for x in subset[1:]]
    if steps := report.get("steps"):
        lines += _steps(steps)
    if judge := report.get("judge"):
        lines += ["", judge_markdown(judge, level=3).rstrip()]
    if pairwise := report.get("pairwise"):
        lines += ["", pairwise_markdown(pairwise, level=3).rstrip()]
    c = report.get("comparison")
    if c and c.get("estimate") is None:
        lines += ["", "### Primary comparison", "", "No task was run by both arms."]
    elif c:
        p = c.get("p_value")
        lines += [
            "",
            "### Primary comparison",
            "",
            f"**{c['candidate_arm']} − {c['baseline_arm']}: {delta_text(c)}** "
            f"({pct(c.get('confidence'), 0)} {c.get('method')}; n = {c.get('n_tasks')} tasks in "
            f"{c.get('n_clusters')} clusters). Tasks: {pair_table_text(c, report)}; "
            f"{c.get('test')}: p = {'—' if p is None else f'{p:.3g}'}.",
        ]
        lines += [""] + [f"- {n}" for n in comparison_notes(c)]
        if floor := noise_floor_text(report):
            lines.append(f"- **{floor}**" if "DEGENERATE" in floor else f"- {floor}")
        lines += [f"- {_inline(line)}" for line in must_never_lines(report)]
    if gate is not None:
        lines += ["", "### Release gate", "", gate_text(gate)]
        if isinstance(gate, dict):
            lines += ["", gate_rule_text(gate)] + [f"- {r}" for r in gate["reasons"]]
    for name, a in report["arms"].items():
        lines += ["", f"### Arm `{name}`", ""]
        lines += _arm(a)
    v = report.get("versions") or NO_VERSIONS
    graders = ", ".join(f"{g} {'/'.join(vs)}" for g, vs in (v.get("grader_versions") or {}).items())
    images = ", ".join(f"`{k}`={x}" for k, x in (v.get("image_ids") or {}).items())
    lines += [
        "",
        f"*Versions:* harness {v.get('harness_version')}, config `{v.get('config_hash')}`, "
        f"images {images or '—'}, graders {graders or '—'}.",
    ]
    for w in report.get("warnings", []):
        lines.append(f"> **Warning:** {w}")
    return "\n".join(lines)


def _arm(a: ArmReport) -> list[str]:
    infra = a.get("infra") or {}
    out = [
        f"Unresolved trials: {infra.get('infra_error_trials', 0)} infra, "
        f"{infra.get('grader_error_trials', 0)} grader, "
        f"{infra.get('harness_error_trials', 0)} harness errors; attempts "
        f"{infra.get('attempts', 0)} ({infra.get('infra_error_attempts', 0)} crashed); "
        f"{retry_text(infra)}. "
        f"Unit: {a['unit']['kind']} ({a['unit']['reason']}; effective clusters "
        f"{a['unit']['effective_clusters']:.1f}).",
        unresolved_by_class_text(infra).capitalize() + ".",
    ]
    causes = causes_lines(a)
    if causes:
        out += ["", "Why unresolved (top causes):", ""]
        out += [f"- {_inline(line)}" for line in causes] + [""]
    agent_caused = causes_lines(a, "agent_failure_causes")
    if agent_caused:
        out += ["", "Failed by the agent's own fault (by kind):", ""]
        out += [f"- {_inline(line)}" for line in agent_caused] + [""]
    succ = a.get("success")
    if succ and succ.get("warning"):
        out.append(f"> {succ['warning']}")
    if a.get("pass_hat_k"):
        at = {p["k"]: p for p in a["pass_at_k"]}
        out += ["", "| k | pass^k (CI) | pass@k (CI) | tasks |", "| ---: | --- | --- | ---: |"]
        for p in select_ks(a["pass_hat_k"]):
            q = at.get(p["k"], {})
            out.append(
                f"| {p['k']} | {pct(p['estimate'])} {ci(p)} | {pct(q.get('estimate'))} "
                f"{ci(q)} | {p['n']} |"
            )
    pred = a.get("pass_hat_k_predicted") or {}
    if pred.get("points"):
        pts = ", ".join(f"k={p['k']}: {pct(p['estimate'])} {ci(p)}" for p in pred["points"])
        chk = pred.get("check") or {}
        out += [
            "",
            f"*Prediction ({fit_text(pred)}; not observed):* pass^k {pts}; at k={chk.get('k')} "
            f"{fit_check_text(chk)}.",
        ]
    elif pred.get("note"):
        out += ["", f"*Predicted pass^k:* {_inline(pred['note'])}."]
    out += [line for m in measures_lines(a.get("measures")) for line in ("", _inline(m) + ".")]
    return out + _slices(a) + _reliability_and_usage(a)


def _slices(a: ArmReport) -> list[str]:
    """Success by class and by cluster (lowest clusters only), and the stratified estimate."""
    out: list[str] = []
    for what, limit in (("class", None), ("cluster", CLUSTER_ROWS)):
        rows = a["slices"][what]
        if len(rows) < 2:
            continue
        shown = sorted(rows, key=lambda r: r["estimate"] or 0.0)[:limit] if limit else rows
        note = f" (lowest {len(shown)} of {len(rows)})" if len(shown) < len(rows) else ""
        out += [
            "",
            f"By {what}{note}:",
            "",
            f"| {what} | tasks | trials | success with interval (n tasks) |",
            "| --- | ---: | ---: | --- |",
        ]
        out += [
            f"| {r['name']} | {r['tasks']} | {r['trials']} | {rate_text(r)}"
            + (" ⚠" if r.get("warning") else "")
            + " |"
            for r in shown
        ]
        warned = [r for r in shown if r.get("warning")]
        if warned:
            out += ["", f"⚠ {warned[0]['warning']} ({len(warned)} of {len(shown)} shown)."]
    st = a.get("stratified")
    if st:
        out += ["", f"Stratified: {rate_text(st)}, n_eff {st['n_eff']:.1f} (Kish); {st['method']}."]
    return out


def _reliability_and_usage(a: ArmReport) -> list[str]:
    """One line of reliability figures and one of tokens, cost, latency and steps."""
    out: list[str] = []
    rel = a["reliability"]
    items = []
    if cons := rel.get("consistency"):
        items.append(f"consistency pass^{cons['k']} {rate_text(cons)}")
    r = rel.get("robustness")
    if r and r.get("estimate") is not None:
        items.append(
            f"robustness (variant − original) {delta_text(r)}, {r['n_pairs']} pairs "
            f"({interval_text(r.get('original_rate'), r.get('original_interval'))} → "
            f"{interval_text(r.get('variant_rate'), r.get('variant_interval'))})"
        )
    cal = rel.get("calibration")
    if cal:
        items.append(
            f"ECE {cal['ece']:.3f} [{cal['lo']:.3f}, {cal['hi']:.3f}] (n={cal['n']} trials)"
        )
    h = rel.get("harm")
    if h:
        items.append(f"harm {rate_text(h)}, mean severity {h['mean_severity']:.3f}")
    if items:
        out += ["", "Reliability: " + "; ".join(items) + "."]
    u = a["usage"]
    cost, lat, steps, tok = u["cost"], u["latency"], u["steps"], u["tokens"]
    line = (
        f"Usage: tokens {tokens_text(tok)}; cost total {money(cost['total_usd'])}, per trial "
        f"{money_interval(cost['per_trial_usd'])}, per success {money_interval(cost['per_success_usd'])}"
    )
    if cost.get("note"):
        line += f" ({cost['note']})"
    if spent := spend_text(cost):
        line += f"; {spent}"
    if lat.get("n"):
        line += (
            f"; latency {latency_text(lat)} (n={lat['n']} trials); steps mean {steps['mean']:.1f}"
        )
        if lat.get("warning"):
            line += f" — {lat['warning']}"
    out += ["", line + "."]
    return out


def _inline(text: str) -> str:
    """Untrusted text (an error message) as inert Markdown: no HTML, links, code or emphasis."""
    for ch in "\\`*_[]<>|#":
        text = text.replace(ch, "\\" + ch)
    return text
