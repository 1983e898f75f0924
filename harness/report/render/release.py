"""Renderers for compare and gate: terminal (rich) and Markdown (JUnit XML of the gate is
``harness.report.render.junit``; plan and history are ``harness.report.render.planning``).

Every rate is printed with n and its interval, every delta with its paired interval
(DESIGN rule 6). Inputs are the plain dicts of ``harness.release``; JSON needs no renderer.
"""

from __future__ import annotations

from rich.table import Table

from harness.release.records import (
    Comparison,
    DesignSummary,
    GatePolicyRecord,
    GateResult,
    NoiseFloor,
    RunComparison,
    Screens,
)
from harness.report.render.fmt import floor_text
from harness.report.render.narrow import dropped_note, fit
from harness.report.render.numbers import (
    MISSING,
    POINTS,
    p_value,
    pct,
    rate_text,
    signed_points,
)
from harness.report.render.numbers import points as pts
from harness.stats.records import Interval


def rate_cell(x: float | None, interval: list[float | None] | None, n: int) -> str:
    """A rate with its interval and n, compact enough for a table cell."""
    if x is None:
        return MISSING
    if not interval:
        return f"{pct(x, 0)} (n={n})"
    return f"{pct(x, 0)} [{pct(interval[0], 0)}, {pct(interval[1], 0)}] n={n}"


def _pside(c: Comparison, policy: GatePolicyRecord | None = None) -> str:
    if not c.get("p_values"):
        return "no test (no paired tasks)"
    if policy and policy.get("sides") == "one-sided":
        return (
            f"{c['test']}: one-sided p = {p_value(c['p_values']['greater'])} (better), "
            f"{p_value(c['p_values']['less'])} (worse)"
        )
    return f"{c['test']}: two-sided p = {p_value(c['p_value'])}"


def comparison_lines(c: Comparison, policy: GatePolicyRecord | None = None) -> list[str]:
    """The numbers behind a paired comparison, one fact per line (plain text)."""
    if c.get("estimate") is None:
        return ["no task has a verdict in both arms: nothing to compare"]
    t, s = c["table"], c["signs"]
    level = c["confidence"]
    bounds = (
        f"one-sided {pct(policy['confidence'], 0)} bounds"
        if policy and policy.get("sides") == "one-sided"
        else f"{pct(level, 0)} interval"
    )
    # Under a one-sided rule the arms' intervals are at the gate's level (90% two-sided for
    # one-sided 95%), not the report's: say so, or one arm reads two ways in two views.
    at = f" ({bounds})" if policy and policy.get("sides") == "one-sided" else ""
    lines = [
        f"baseline  {rate_text(c['baseline']) + at if c['baseline'] else MISSING}",
        f"candidate {rate_text(c['candidate']) + at if c['candidate'] else MISSING}",
        f"delta (candidate − baseline) {signed_points(c['estimate'])}, {bounds} "
        f"[{signed_points(c['lo'])}, {signed_points(c['hi'])}] "
        f"(n={c['n']} tasks, {c['n_clusters']} clusters)",
        f"method: {c['method']}; weights {c['weights']}, unresolved trials {c['denominator']}",
        f"estimator: {c['estimator']}",
    ]
    every = c.get("all_trials")
    if every and every.get("estimate") is not None:
        lines.append(
            "all trials (for reading, biased under adaptive repeats): "
            f"{signed_points(every['estimate'])} "
            f"[{signed_points(every['lo'])}, {signed_points(every['hi'])}]"
        )
    if c.get("interval_warning"):
        lines.append(f"warning: {c['interval_warning']}")
    if c["test"] and "McNemar" in c["test"]:
        lines.append(
            f"tasks: both pass {t['both_pass']}, fixed {t['fixed']}, broke {t['broke']}, "
            f"both fail {t['both_fail']}"
        )
    else:
        lines.append(
            f"per-task differences: improved {s['improved']}, worse {s['worse']}, "
            f"tied {s['tied']} (fixed {t['fixed']}, broke {t['broke']}, where "
            f"{c.get('fixed_rule', 'a task passes at rate ≥ 50%')})"
        )
    lines.append(_pside(c, policy))
    lines.append(f"pairing: {c['pairing']}; design: {c.get('design')}")
    if c["dropped"]["n"]:
        lines.append(f"unpaired tasks dropped: {c['dropped']['n']}")
    return lines


def _arm_of(side: str) -> str:
    """The arm of a comparison side's label ``RUN:ARM`` (run ids hold no colon)."""
    return side.partition(":")[2]


def _floor_line(n: NoiseFloor | None, baseline: str | None) -> str:
    if not n:
        return "noise floor: no A/A arm in this run (add aa: true to the suite to measure it)"
    return floor_text(n, baseline)


def _screen_rows(screens: Screens) -> list[list[str]]:
    rows = []
    for s in screens["classes"]:
        g = s["signs"]
        rows.append(
            [
                s["class"],
                f"{s['n_tasks']} ({s.get('n_clusters', '?')} cl.)",
                rate_cell(s["baseline"], s.get("baseline_interval"), s["n_tasks"]),
                rate_cell(s["candidate"], s.get("candidate_interval"), s["n_tasks"]),
                (
                    f"{pts(s['estimate'])} [{pts(s['lo'])}, {pts(s['hi'])}]"
                    if s.get("lo") is not None
                    else f"{pts(s['estimate'])} (no interval)"
                )
                + (" ⚠" if s.get("warning") else ""),
                f"+{g['improved']} / −{g['worse']}",
                p_value(s["p_value"]),
                p_value(s["p_holm"]),
                "look here" if s["look_here"] else "",
            ]
        )
    return rows


SCREEN_COLS = ["class", "tasks", "base", "new", "delta (pts)", "tasks ±", "p", "p Holm", ""]


def screen_notes(screens: Screens) -> list[str]:
    """The thresholds a screens table uses, and each class's interval warning (⚠)."""
    out = [f"thresholds: {screens['thresholds']}"] if screens.get("thresholds") else []
    out += [f"⚠ {s['class']}: {s['warning']}" for s in screens["classes"] if s.get("warning")]
    return out


# ------------------------------------------------------------------------------ terminal
def print_compare(c: RunComparison) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(f"[bold]Paired comparison[/] {c['baseline_side']} → {c['candidate_side']}")
    for d in c["differences"]:
        style = "yellow" if c["forced"] else "red"
        con.print(f"[{style}]not comparable:[/] {d['check']}: {d['message']}")
    if c["refused"]:
        con.print("[red]refused: these sides cannot be paired (use --force to proceed anyway)[/]")
        return
    if c["forced"]:
        con.print("[yellow]--force: pairing anyway; the delta mixes these differences in[/]")
    if c.get("judge_change"):
        con.print(f"[yellow]judge changed:[/] {c['judge_change']}")
    for line in comparison_lines(c):
        con.print("  " + line)
    if c.get("note"):
        con.print(f"  [dim]{c['note']}[/]")
    con.print("  " + _floor_line(c.get("noise_floor"), _arm_of(c["baseline_side"])))
    _print_screens(con, Table, c["screens"])


def _print_screens(con, table_cls, screens: Screens | None) -> None:
    if not screens or len(screens["classes"]) < 2:
        return
    t = table_cls(title=f"Screens by class — {screens['label']}", title_justify="left")
    for col in SCREEN_COLS:
        t.add_column(col)
    for row in _screen_rows(screens):
        t.add_row(*row[:-1], f"[yellow]{row[-1]}[/]" if row[-1] else "")
    if isinstance(t, Table):
        dropped = fit(t, con.width, ["tasks ±", "p", "tasks", "new", "base"])
        if note := dropped_note(dropped, con):
            con.print(f"[dim]{note}[/]")
    con.print(t)
    for line in screen_notes(screens):
        con.print(f"[dim]{line}[/]")
    if screens["note"]:
        con.print(f"[yellow]{screens['note']}[/]")


_STYLE = {
    "improvement": "green",
    "non-inferior": "green",
    "inconclusive": "yellow",
    "regression": "red",
    "no-verdict": "red",
}


def print_gate(g: GateResult) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(f"[bold]Release gate[/] run {g['run_id']} (suite {g.get('suite')})")
    style = _STYLE[g["verdict"]]
    ship = "may ship" if g["may_ship"] else "do not ship"
    label = g.get("verdict_label", g["verdict"])
    con.print(f"[bold {style}]VERDICT: {label.upper()}[/] (exit {g['exit_code']}, {ship})")
    for r in g["reasons"]:
        con.print(f"  {r}")
    con.print("[bold]Must-never checks[/] (asserted, not tested)")
    if not g["must_never"]:
        con.print("  none declared")
    for m in g["must_never"]:
        mark = {"held": "[green]held[/]", "violated": "[red]VIOLATED[/]"}.get(
            m["status"], "[yellow]unverified[/]"
        )
        con.print(f"  {mark} {m['name']}: {m['message']}")
    cov = g["coverage"]
    parts = [
        f"{arm} {a['unresolved']}/{a['trials']} ({pct(a['share'])})"
        for arm, a in cov["arms"].items()
    ]
    ok = "[green]ok[/]" if cov["status"] == "ok" else "[red]exceeded[/]"
    con.print(f"[bold]Unresolved coverage[/]: {', '.join(parts)}; limit {pct(cov['limit'])}: {ok}")
    if text := balance_text(g):
        bal = "[green]ok[/]" if g["balance"]["status"] == "ok" else "[red]imbalanced[/]"
        con.print(f"[bold]Retry balance[/]: {text}: {bal}")
    head, lines = decision_lines(g)
    con.print(f"[bold]{head}[/]")
    for line in lines:
        con.print("  " + line)
    con.print(
        f"  trials: {g['design']['design']}; {g['design']['trials']} trials spent"
        + _saved(g["design"])
    )
    con.print("  " + _floor_line(g["noise_floor"], g["baseline"]))
    _print_screens(con, Table, g["screens"])
    for w in g["warnings"]:
        con.print(f"[yellow]warning:[/] {w}")
    con.print("[dim]this evaluation cannot establish: " + "; ".join(g["cannot_establish"]) + "[/]")


def balance_text(g: GateResult) -> str | None:
    """The retry-balance check in one line (None when there is no baseline to compare)."""
    bal = g.get("balance")
    if not bal or bal["status"] == "not applicable":
        return None
    parts = []
    for gap in bal["gaps"]:
        arms = ", ".join(
            f"{arm} {s['count']}/{s['trials']} ({pct(s['share'])})"
            for arm, s in gap["arms"].items()
        )
        parts.append(f"{gap['what']} {arms}, gap {signed_points(gap['gap'])}")
    return "; ".join(parts) + f"; bound {balance_bound(bal['bound'])}"


def balance_bound(bound: float) -> str:
    """The retry balance's bound on the gap between arms' shares, in points: '5.0 pts'."""
    return f"{pts(bound, signed=False)} {POINTS}"


def decision_lines(g: GateResult) -> tuple[str, list[str]]:
    """(heading, lines) of the statistical decision: the threshold check or the primary
    comparison, then the sequential spending, shared by the terminal and Markdown."""
    pol = g["policy"]
    th = g.get("threshold")
    lines: list[str] = []
    if th is not None:
        head = (
            f"Threshold: {g['candidate']} must exceed {pct(pol['bar'])} ({pol['sides']} at "
            f"{pct(pol['confidence'], 0)}) → {g.get('verdict_label', th['verdict'])}"
        )
        if th.get("estimate") is not None:
            lines += [
                f"rate {pct(th['estimate'])} [{pct(th['lo'])}, {pct(th['hi'])}] "
                f"(n={th['n']} tasks, {th['n_clusters']} clusters); bar {pct(th['bar'])}",
                f"P(p > {pct(th['bar'])}) = {th['p_above_bar']:.3f} (posterior, {th['prior']} "
                f"prior, effective n {th['n_eff']:.0f})",
                f"method: {th['method']}",
            ]
        else:
            lines.append(th["why"])
        if primary := g.get("primary"):
            lines.append("for reference, against the baseline:")
            lines += ["  " + x for x in comparison_lines(primary)]
    else:
        p = g["primary"]
        assert p is not None  # every rule but threshold compares against a baseline
        rule = pol["rule"] + (f" (margin {pts(pol['margin'], False)} pts)" if pol["margin"] else "")
        head = (
            f"Primary comparison {g['baseline']} → {g['candidate']}: rule {rule}, "
            f"{pol['sides']} at {pct(pol['confidence'], 0)} → {p['verdict']}"
        )
        lines += comparison_lines(p, pol)
    if q := g.get("quantity"):
        lines.append(q["text"])
    if full := g.get("full_suite"):
        lines.append(_full_suite_line(full, th is not None, pol))
    seq = g.get("sequential")
    if seq:
        lines.append(
            f"night {seq['look']} of the season ({len(seq['nights'])} pooled): evidence for "
            f"shipping {seq['ship_evidence']:.3g} (needs {seq['ship_threshold']:.3g}), for a "
            f"regression {seq['regression_evidence']:.3g} (needs {seq['regression_threshold']:.4g})"
        )
        lines.append(f"{seq['schedule']}; {seq['restart']}")
    return head, lines


def _full_suite_line(full: Interval, level: bool, pol: GatePolicyRecord) -> str:
    """A subset run's full-suite estimate, beside the paired subset's verdict (why not the
    verdict: ``harness.release.subset_gate``)."""
    show = pct if level else signed_points
    head = "full suite, estimated (shown, not judged: the verdict is on the paired subset)"
    if full.get("estimate") is None:
        return f"{head}: no estimate"
    return (
        f"{head}: {full.get('estimand')} {show(full['estimate'])} [{show(full.get('lo'))}, "
        f"{show(full.get('hi'))}] ({pol['sides']} {pct(pol['confidence'], 0)} bounds), "
        f"{full.get('method')}"
    )


def _saved(d: DesignSummary) -> str:
    if d["full_repeats_trials"] == d["trials"]:
        return ""
    return (
        f" (full repeats would cost {d['full_repeats_trials']}: {pct(d['saved_share'], 0)} saved)"
    )


# ------------------------------------------------------------------------------ markdown
def _md_table(cols: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _screens_md(s: Screens) -> list[str]:
    """The screens table, its notes and its call-out: what compare and gate print alike."""
    out = _md_table(SCREEN_COLS, _screen_rows(s))
    out += [""] + [f"- {line}" for line in screen_notes(s)]
    return out + (["", f"**{s['note']}**"] if s["note"] else [])


def gate_markdown(g: GateResult) -> str:
    icon = {"improvement": "✅", "non-inferior": "✅", "inconclusive": "⚠️"}.get(g["verdict"], "⛔")
    ship = "may ship" if g["may_ship"] else "do not ship"
    out = [
        f"### {icon} Release gate: **{g.get('verdict_label', g['verdict'])}** ({ship}, "
        f"exit {g['exit_code']})",
        "",
        f"Run `{g['run_id']}` · suite `{g.get('suite')}` · "
        + (f"{g['baseline']} → {g['candidate']}" if g["baseline"] else f"arm {g['candidate']}"),
        "",
    ]
    out += [f"- {r}" for r in g["reasons"]]
    out += ["", "**Must-never checks** (asserted, not tested)", ""]
    if not g["must_never"]:
        out.append("- none declared")
    out += [f"- **{m['status']}** {m['name']}: {m['message']}" for m in g["must_never"]]
    cov = g["coverage"]
    out += [
        "",
        "**Unresolved coverage** (limit "
        f"{pct(cov['limit'])}): "
        + ", ".join(
            f"{arm} {a['unresolved']}/{a['trials']} ({pct(a['share'])})"
            for arm, a in cov["arms"].items()
        )
        + f" — {cov['status']}",
        "",
    ]
    if text := balance_text(g):
        out += [f"**Retry balance**: {text} — {g['balance']['status']}", ""]
    head, lines = decision_lines(g)
    out += [f"**{head}**", ""]
    out += [f"- {line}" for line in lines]
    out.append(
        f"- trials: {g['design']['design']}; {g['design']['trials']} spent{_saved(g['design'])}"
    )
    out.append(f"- {_floor_line(g['noise_floor'], g['baseline'])}")
    s = g["screens"]
    if s and len(s["classes"]) >= 2:
        out += ["", f"<details><summary>Screens by class ({s['label']})</summary>", ""]
        out += [*_screens_md(s), "", "</details>"]
    if g["warnings"]:
        out += [""] + [f"> ⚠️ {w}" for w in g["warnings"]]
    out += ["", "_Cannot establish: " + "; ".join(g["cannot_establish"]) + "._"]
    return "\n".join(out) + "\n"


def compare_markdown(c: RunComparison) -> str:
    out = [f"### Paired comparison `{c['baseline_side']}` → `{c['candidate_side']}`", ""]
    out += [f"- **not comparable** ({d['check']}): {d['message']}" for d in c["differences"]]
    if c["refused"]:
        out += ["", "Refused: these sides cannot be paired (`--force` to proceed anyway)."]
        return "\n".join(out) + "\n"
    if c.get("judge_change"):
        out.append(f"- **judge changed**: {c['judge_change']}")
    out += [f"- {line}" for line in comparison_lines(c)]
    if c.get("note"):
        out.append(f"- {c['note']}")
    out.append(f"- {_floor_line(c.get('noise_floor'), _arm_of(c['baseline_side']))}")
    s = c.get("screens")
    if s and len(s["classes"]) >= 2:
        out += ["", f"Screens by class ({s['label']}):", "", *_screens_md(s)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ JUnit
# ------------------------------------------------------------------------------ plan, history
