"""Render report data for a terminal. Every rate is printed with its n and interval."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.release.records import PairTable
from harness.report.causes import causes_lines
from harness.report.records import (
    NO_VERSIONS,
    ArmReport,
    Comparison,
    Reliability,
    Report,
    SliceRow,
    UsageSection,
)
from harness.report.render.fmt import (
    comparison_notes,
    denominator_text,
    fit_check_text,
    interval_text,
    latency_text,
    noise_floor_text,
    retry_text,
    select_ks,
    spend_text,
    tokens_text,
    unresolved_by_class_text,
)
from harness.report.render.narrow import dropped_note, fit
from harness.report.render.numbers import (
    ci,
    delta_text,
    money,
    money_interval,
    p_value,
    pct,
    rate_text,
)

# Re-exported for callers of the first-cut report.
__all__ = ["pct", "rate_text", "render"]

CLUSTER_ROWS = 10


def render(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    run = report["run"]
    s = report.get("settings", {})
    conf = s.get("confidence", 0.95)
    console.print(
        f"[bold]Run {run['id']}[/] suite [bold]{run['suite']}[/] · {run['status']} · "
        f"sandbox {run['sandbox']} · harness {run['harness_version']} · "
        f"config {str(run['config_hash'])[:12]} · seed {run['seed']}"
    )
    console.print(
        f"[dim]Estimand: {report['estimand']}.\nSampling unit: {report['sampling_unit']}. "
        f"Intervals: {pct(conf, 0)}. Denominator: {denominator_text(report)}.[/]"
    )
    _summary(console, report)
    for name, arm in report["arms"].items():
        _arm(console, name, arm)
    if comparison := report.get("comparison"):
        _comparison(console, comparison)
        if floor := noise_floor_text(report):
            style = "yellow" if "DEGENERATE" in floor else "dim"
            console.print(f"[{style}]{escape(floor)}[/]")
    _versions(console, report)
    for w in report.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}")


def _summary(console: Console, report: Report) -> None:
    table = Table(title="Per arm", title_justify="left")
    for col in (
        "arm",
        "tasks (clusters)",
        "trials sched / done / unresolved",
        "success (CI, n)",
        "unstable",
        "crash rate",
    ):
        table.add_column(col)
    methods: dict[str, list[str]] = {}
    for name, a in report["arms"].items():
        succ = a.get("success")
        crash = (a.get("infra") or {}).get("crash_rate")
        table.add_row(
            name,
            f"{a['tasks']} ({a['clusters']})",
            f"{a['trials_scheduled']}/{a['trials_completed']}/{a['trials_unresolved']}"
            + (f" ({a['trials_missing']} missing)" if a.get("trials_missing") else ""),
            rate_text(succ),
            str(a.get("unstable_tasks", "—")),
            rate_text(crash, "attempt") if crash else "—",
        )
        if succ:
            methods.setdefault(succ["method"] or "", []).append(name)
    if note := dropped_note(fit(table, console.width, ["unstable"])):
        console.print(f"[dim]{note}[/]")
    console.print(table)
    for method, names in methods.items():
        console.print(f"[dim]success interval ({', '.join(names)}): {method}[/]")


def _arm(console: Console, name: str, a: ArmReport) -> None:
    console.rule(f"[bold]{name}")
    infra = a.get("infra") or {}
    console.print(
        f"unresolved: {infra.get('infra_error_trials', 0)} infra, "
        f"{infra.get('grader_error_trials', 0)} grader, "
        f"{infra.get('harness_error_trials', 0)} harness errors; "
        f"attempts {infra.get('attempts', 0)} ({infra.get('infra_error_attempts', 0)} crashed); "
        f"{retry_text(infra)}; "
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
            f"[magenta]PREDICTION[/] pass^k (beta-binomial a={pred['a']:.2f}, "
            f"b={pred['b']:.2f}): {pts}. Check at k={chk.get('k')}: {fit_check_text(chk)}."
        )
    elif pred.get("note"):
        console.print(f"predicted pass^k: {pred['note']}")
    _slices(console, "class", a["slices"]["class"], None)
    _slices(console, "cluster", a["slices"]["cluster"], CLUSTER_ROWS)
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
    _reliability(console, a["reliability"])
    _usage(console, a["usage"])


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


def _comparison(console: Console, c: Comparison) -> None:
    console.rule("[bold]primary comparison")
    table = c.get("table") or PairTable()
    p = c.get("p_value")
    console.print(
        f"{c['candidate_arm']} − {c['baseline_arm']}: {delta_text(c)} ({pct(c.get('confidence'), 0)} "
        f"{c.get('method')}; n={c.get('n_tasks')} tasks in {c.get('n_clusters')} clusters)"
    )
    if c.get("estimate") is None:
        console.print("no task was run by both arms: nothing to compare")
        return
    console.print(
        f"tasks: both pass {table.get('both_pass')}, fixed {table.get('fixed')}, broke "
        f"{table.get('broke')}, both fail {table.get('both_fail')}; {c.get('test')}: "
        f"p={p_value(p)}"
    )
    for line in comparison_notes(c):
        console.print(f"[dim]{line}[/]")


def _versions(console: Console, report: Report) -> None:
    v = report.get("versions") or NO_VERSIONS
    graders = ", ".join(f"{g} {'/'.join(vs)}" for g, vs in (v.get("grader_versions") or {}).items())
    images = ", ".join(f"{k}={str(x)[:19]}" for k, x in (v.get("image_ids") or {}).items())
    console.print(
        f"[dim]versions: harness {v.get('harness_version')}, config "
        f"{str(v.get('config_hash'))[:12]}, images {images or '—'}, graders {graders or '—'}[/]"
    )
