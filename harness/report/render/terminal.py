"""Render report data for a terminal. Every rate is printed with its n and interval."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.release.records import GateResult
from harness.report.causes import causes_lines
from harness.report.records import (
    NO_VERSIONS,
    ArmReport,
    Comparison,
    Reliability,
    Report,
    SliceRow,
    StepProgress,
    UsageSection,
)
from harness.report.render.fmt import (
    comparison_notes,
    denominator_text,
    fit_check_text,
    fit_lines,
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
from harness.report.render.measures import measures_lines
from harness.report.render.numbers import (
    ci,
    delta_text,
    money,
    money_interval,
    p_value,
    pct,
    rate_text,
)
from harness.report.render.summary import SECTION_NAMES, render_summary

# Re-exported for callers of the first-cut report.
__all__ = ["SECTION_NAMES", "pct", "rate_text", "render"]

CLUSTER_ROWS = 10
ARM_SECTIONS = ("unresolved", "pass-k", "slices", "measures", "reliability", "usage")
"""Sections printed per arm, under the arm's rule."""


def render(
    report: Report,
    console: Console | None = None,
    *,
    sections: Sequence[str] | None = None,
    gate: GateResult | str | None = None,
    more: str | None = None,
) -> None:
    """The summary (``summary.render_summary``), then the ``sections`` named, in the order of
    ``SECTION_NAMES`` (None: every section, the full report). ``gate`` and ``more`` are the
    summary's. No line ends in spaces."""
    console = console or Console()
    with console.capture() as captured:
        _render(console, report, sections, gate, more)
    console.file.write(without_trailing_spaces(captured.get()))
    console.file.flush()


def without_trailing_spaces(text: str) -> str:
    """``text`` with no line ending in spaces (rich pads the cells and rules it wraps; a
    colour code after the spaces stays)."""
    return _TRAILING.sub(r"\1", text)


_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def _render(
    console: Console,
    report: Report,
    sections: Sequence[str] | None,
    gate: GateResult | str | None,
    more: str | None,
) -> None:
    chosen = set(SECTION_NAMES if sections is None else sections)
    render_summary(console, report, gate, more if sections is not None else None)
    if "method" in chosen:
        _method(console, report)
    for name, arm in report["arms"].items():
        if chosen & set(ARM_SECTIONS):
            console.rule(f"[bold]{escape(name)}")
            _arm(console, arm, chosen)
    if (steps := report.get("steps")) and "steps" in chosen:
        _steps(console, steps)
    if (judge := report.get("judge")) and "judge" in chosen:
        _judge(console, judge)
    if (pairwise := report.get("pairwise")) and "pairwise" in chosen:
        _pairwise(console, pairwise)
    if (comparison := report.get("comparison")) and "comparison" in chosen:
        _comparison(console, comparison, report)
        if floor := noise_floor_text(report):
            style = "yellow" if "DEGENERATE" in floor else "dim"
            console.print(f"[{style}]{escape(floor)}[/]")
    if "versions" in chosen:
        _versions(console, report)


def _judge(console: Console, judge: dict) -> None:
    """The judge section: the lines ``harness judge-agreement`` prints, block by block."""
    from harness.report.render.judging import judge_blocks, judge_head

    _line_blocks(console, "judge", judge_head(judge), judge_blocks(judge))


def _pairwise(console: Console, pairwise: dict) -> None:
    """The pairwise section: the lines ``harness pairwise`` prints, block by block."""
    from harness.report.render.pairwise import pairwise_blocks, pairwise_head

    _line_blocks(console, "pairwise", pairwise_head(pairwise), pairwise_blocks(pairwise))


def _line_blocks(
    console: Console, title: str, head: str, blocks: list[tuple[str, list[str]]]
) -> None:
    """A section of plain lines: its rule, its head line, then each block after a blank."""
    console.rule(f"[bold]{title}")
    for line in fit_lines([head], console.width):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for _, lines in blocks:
        console.print()
        for line in fit_lines(lines, console.width):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def _steps(console: Console, steps: list[StepProgress]) -> None:
    """Per-step progress of the multi-step tasks: reached, passed (with the task's own
    interval over its trials) and the mean reward, per arm and task."""
    console.rule("[bold]steps")
    last = None
    for row in steps:
        if (row["arm"], row["task"]) != last:
            last = (row["arm"], row["task"])
            console.print(f"{row['arm']} · {row['task']}", markup=False, highlight=False)
        rate = f"{pct(row['rate'])} [{pct(row['lo'])}, {pct(row['hi'])}]"
        line = (
            f"  {row['index']}. {row['step']}: reached {row['reached']}/{row['trials']}, "
            f"passed {row['passed']}/{row['trials']} {rate}, mean reward "
            f"{row['mean_reward']:.2f}"
        )
        wrapped = textwrap.fill(
            line, width=console.width, subsequent_indent="     ", break_on_hyphens=False
        )
        console.print(wrapped, markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"[dim]passed: the share of the task's trials that passed the step, "
        f"{pct(steps[0]['confidence'], 0)} Wilson interval over those trials; a step not "
        "reached (an earlier one stopped the trial) scores 0[/]"
    )


def _method(console: Console, report: Report) -> None:
    """What is estimated, over what unit, and each arm's interval method."""
    s = report.get("settings", {})
    console.rule("[bold]method")
    console.print(
        f"Estimand: {report['estimand']}.\nSampling unit: {report['sampling_unit']}. "
        f"Intervals: {pct(s.get('confidence', 0.95), 0)}. Denominator: {denominator_text(report)}."
    )
    methods: dict[str, list[str]] = {}
    for name, a in report["arms"].items():
        if succ := a.get("success"):
            methods.setdefault(succ["method"] or "", []).append(name)
    for method, names in methods.items():
        console.print(f"success interval ({', '.join(names)}): {method}")


def _arm(console: Console, a: ArmReport, chosen: set[str]) -> None:
    if "unresolved" in chosen:
        _unresolved(console, a)
    if "pass-k" in chosen:
        _pass_k(console, a)
    if "slices" in chosen:
        _slices(console, "class", a["slices"]["class"], None)
        _slices(console, "cluster", a["slices"]["cluster"], CLUSTER_ROWS)
        _stratified(console, a)
    if "measures" in chosen:
        for line in measures_lines(a.get("measures")):
            wrapped = textwrap.fill(
                line, width=console.width, subsequent_indent="  ", break_on_hyphens=False
            )
            console.print(wrapped, markup=False, highlight=False, soft_wrap=True)
    if "reliability" in chosen:
        _reliability(console, a["reliability"])
    if "usage" in chosen:
        _usage(console, a["usage"])


def _unresolved(console: Console, a: ArmReport) -> None:
    """Trials without a verdict by kind, the crash and retry rates, every listed cause."""
    infra = a.get("infra") or {}
    crash = infra.get("crash_rate")
    console.print(
        f"unresolved: {infra.get('infra_error_trials', 0)} infra, "
        f"{infra.get('grader_error_trials', 0)} grader, "
        f"{infra.get('harness_error_trials', 0)} harness errors"
        + (f" ({a['trials_missing']} scheduled trials missing)" if a.get("trials_missing") else "")
        + f"; attempts {infra.get('attempts', 0)} ({infra.get('infra_error_attempts', 0)} "
        f"crashed), crash rate {rate_text(crash, 'attempt') if crash else '—'}; "
        f"{retry_text(infra)}; unstable tasks {a.get('unstable_tasks', '—')}; "
        f"unit: {a['unit']['kind']} ({a['unit']['reason']}, "
        f"effective clusters {a['unit']['effective_clusters']:.1f})"
    )
    console.print(unresolved_by_class_text(infra))
    causes = causes_lines(a)
    if causes:
        console.print("[yellow]why unresolved[/] (top causes; `harness view` shows each trial):")
        for line in causes:
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    agent_caused = causes_lines(a, "agent_failure_causes")
    if agent_caused:
        console.print("[yellow]failed by the agent's own fault[/] (by kind):")
        for line in agent_caused:
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _pass_k(console: Console, a: ArmReport) -> None:
    """Observed pass^k and pass@k, then the beta-binomial prediction beyond them."""
    if a.get("pass_hat_k"):
        t = Table(title="pass^k (all k succeed) and pass@k (at least one)", title_justify="left")
        for col in ("k", "pass^k (CI)", "pass@k (CI)", "tasks"):
            t.add_column(col)
        at = {p["k"]: p for p in a["pass_at_k"]}
        for p in select_ks(a["pass_hat_k"]):
            q = at.get(p["k"], {})
            t.add_row(
                str(p["k"]),
                f"{pct(p['estimate'])} {ci(p)}",
                f"{pct(q.get('estimate'))} {ci(q)}",
                str(p["n"]),
            )
        console.print(t)
    pred = a.get("pass_hat_k_predicted") or {}
    if pred.get("points"):
        pts = ", ".join(f"k={p['k']}: {pct(p['estimate'])} {ci(p)}" for p in pred["points"])
        chk = pred.get("check") or {}
        console.print(
            f"[magenta]PREDICTION[/] pass^k ({fit_text(pred)}): {pts}. "
            f"Check at k={chk.get('k')}: {fit_check_text(chk)}."
        )
    elif pred.get("note"):
        console.print(f"predicted pass^k: {pred['note']}")


def _stratified(console: Console, a: ArmReport) -> None:
    st = a.get("stratified")
    if st:
        strata = ", ".join(
            f"{x['name']} {x['tasks']} tasks w={x['weight_share']:.2f} {pct(x['estimate'])}"
            for x in st.get("strata", [])
        )
        console.print(
            f"stratified: {rate_text(st)}, n_eff {st['n_eff']:.1f} (Kish) — {st['method']}"
            + (f"; strata: {strata}" if strata else "")
        )


def _slices(console: Console, what: str, rows: list[SliceRow], limit: int | None) -> None:
    if not rows or len(rows) < 2:
        return
    shown = sorted(rows, key=lambda r: float(r["estimate"] or 0.0))[:limit] if limit else rows
    title = f"by {what}" + (
        f" (lowest {len(shown)} of {len(rows)}; all in --json)" if len(shown) < len(rows) else ""
    )
    t = Table(title=title, title_justify="left")
    for col in (what, "tasks", "trials", "success with interval (n tasks)"):
        t.add_column(col)
    for r in shown:
        mark = " ⚠" if r.get("warning") else ""
        t.add_row(r["name"], str(r["tasks"]), str(r["trials"]), rate_text(r) + mark)
    console.print(t)
    warned = [r for r in shown if r.get("warning")]
    if warned:
        console.print(f"[dim]⚠ {warned[0]['warning']} ({len(warned)} of {len(shown)} shown)[/]")


def _reliability(console: Console, rel: Reliability) -> None:
    lines = []
    c = rel.get("consistency")
    if c:
        lines.append(f"consistency pass^{c['k']}: {rate_text(c)}")
    r = rel.get("robustness")
    if r:
        if r.get("estimate") is None:
            lines.append(f"robustness: {r.get('note')} ({r['n_pairs']} pairs)")
        else:
            lines.append(
                f"robustness (variant − original): {delta_text(r)} over {r['n_pairs']} pairs "
                f"on {r['n_tasks']} tasks "
                f"({interval_text(r['original_rate'], r.get('original_interval'))}"
                f" → {interval_text(r['variant_rate'], r.get('variant_interval'))}; "
                f"p={p_value(r['p_value'])})"
            )
    cal = rel.get("calibration")
    if cal:
        lines.append(
            f"calibration: ECE {cal['ece']:.3f} [{cal['lo']:.3f}, {cal['hi']:.3f}] over "
            f"{cal['n']} trials with a stated confidence (mean confidence "
            f"{interval_text(cal['mean_confidence'], cal.get('mean_confidence_interval'))}, "
            f"success {interval_text(cal['success_rate'], cal.get('success_interval'))})"
        )
    h = rel.get("harm")
    if h:
        lines.append(
            f"harm: {rate_text(h)} of trials harmful ({h['harmful_trials']} of {h['trials']}), "
            f"mean severity {h['mean_severity']:.3f}"
        )
    if lines:
        console.print("reliability: " + "\n             ".join(lines))


def _usage(console: Console, u: UsageSection) -> None:
    tok = u["tokens"]
    cost = u["cost"]
    lat = u["latency"]
    steps = u["steps"]
    console.print(f"tokens: {tokens_text(tok)}")
    line = (
        f"cost: total {money(cost['total_usd'])}, per trial {money_interval(cost['per_trial_usd'])}, "
        f"per success {money_interval(cost['per_success_usd'])}"
    )
    if cost.get("note"):
        line += f" — {cost['note']}"
    if spent := spend_text(cost):
        line += f"; {spent}"
    console.print(line)
    if lat.get("n"):
        console.print(
            f"latency: {latency_text(lat)} (n={lat['n']} trials)"
            + (f" [yellow]{lat['warning']}[/]" if lat.get("warning") else "")
            + f"; steps: mean {steps['mean']:.1f}, p50 {steps['p50']:.0f}, p95 {steps['p95']:.0f}"
        )


def _comparison(console: Console, c: Comparison, report: Report) -> None:
    console.rule("[bold]primary comparison")
    p = c.get("p_value")
    console.print(
        f"{c['candidate_arm']} − {c['baseline_arm']}: {delta_text(c)} ({pct(c.get('confidence'), 0)} "
        f"{c.get('method')}; n={c.get('n_tasks')} tasks in {c.get('n_clusters')} clusters)"
    )
    if c.get("estimate") is None:
        console.print("no task was run by both arms: nothing to compare")
        return
    console.print(escape(f"tasks: {pair_table_text(c, report)}; {c.get('test')}: p={p_value(p)}"))
    for line in must_never_lines(report):
        console.print(escape(line))
    for line in comparison_notes(c):
        console.print(f"[dim]{escape(line)}[/]")


def _versions(console: Console, report: Report) -> None:
    v = report.get("versions") or NO_VERSIONS
    graders = ", ".join(f"{g} {'/'.join(vs)}" for g, vs in (v.get("grader_versions") or {}).items())
    images = ", ".join(f"{k}={str(x)[:19]}" for k, x in (v.get("image_ids") or {}).items())
    run = report["run"]
    console.print(
        f"[dim]versions: harness {v.get('harness_version')}, config "
        f"{str(v.get('config_hash'))[:12]}, seed {run['seed']}, images {images or '—'}, "
        f"graders {graders or '—'}[/]"
    )
