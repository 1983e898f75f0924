"""The report's first screen: what a reader takes in within ten seconds.

Per arm the headline success with its n and interval, the primary comparison with its
fixed/broke counts and the must-never checks beside them (with or without a gate), the gate's verdict when the suite
declares a gate, why trials have no verdict, the warnings, and one line naming the sections
behind it (``harness report RUN --full`` or ``--section NAME``). Every number is taken as
the report data (or the gate's result) holds it, formatted by ``numbers``: the same
interval as every other section shows for the same quantity.
"""

from __future__ import annotations

import textwrap

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.commands.options import REPORT_SECTIONS as SECTION_NAMES
from harness.release.records import GateResult
from harness.report.causes import causes_lines
from harness.report.records import Report
from harness.report.render.fmt import denominator_text, must_never_lines, pair_table_text
from harness.report.render.narrow import keep_words_whole
from harness.report.render.numbers import (
    delta_text,
    p_value,
    pct,
    points,
    rate_text,
    signed_points,
)
from harness.report.render.subset import subset_lines

GATE_NOT_EVALUATED = "not evaluated"
"""What ``gate`` holds when the suite declares a gate that could not be applied."""

SUMMARY_CAUSES = 3
"""Causes of unresolved trials listed per arm on the first screen (all in --section unresolved)."""


def render_summary(
    console: Console,
    report: Report,
    gate: GateResult | str | None = None,
    more: str | None = None,
) -> None:
    """Print the first screen. ``gate``: the gate's result, ``GATE_NOT_EVALUATED`` when the
    suite declares a gate that could not be applied, None when it declares none. ``more``:
    the command that shows the rest (None: print no pointer)."""
    run = report["run"]
    conf = report.get("settings", {}).get("confidence", 0.95)
    fixed = report.get("settings", {}).get("estimand") == "fixed-suite"
    _say(
        console,
        f"Run {run['id']} · suite {run['suite']} · {run['status']} · sandbox {run['sandbox']}",
        style="bold",
    )
    _say(
        console,
        f"success: mean of per-task success rates, {pct(conf, 0)} intervals"
        + (" for this suite's tasks held fixed (estimand: fixed-suite); " if fixed else "; ")
        + f"{denominator_text(report)}",
        style="dim",
    )
    _arms(console, report)
    for line in subset_lines(report):
        _say(console, line.strip(), indent=2 if line.startswith("  ") else 0)
    console.print()
    _comparison(console, report)
    _gate(console, gate)
    if judge := report.get("judge"):
        from harness.report.render.judging import judge_line

        _say(console, judge_line(judge))
    if pairwise := report.get("pairwise"):
        from harness.report.render.pairwise import pairwise_line

        _say(console, pairwise_line(pairwise))
    console.print()
    _unresolved(console, report)
    for line in merged_warnings(report):
        _say(console, f"warning: {line}", style="yellow")
    if more:
        _say(
            console,
            f"more: --full (every section) or --section NAME,... ({', '.join(SECTION_NAMES)}):",
            style="dim",
        )
        _say(console, f"{more} --full", indent=2)


def _say(console: Console, text: str, *, style: str = "", indent: int = 0) -> None:
    """Plain text (never markup) wrapped at the console's width, continuation lines under a
    hanging indent, without the trailing spaces rich leaves where it wraps."""
    wrapped = textwrap.fill(
        text,
        width=console.width,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + 2),
        break_on_hyphens=False,
    )
    console.print(Text(wrapped, style=style), soft_wrap=True)


def _arms(console: Console, report: Report) -> None:
    """One row per arm; when the arms' names are too long for a table whose words stay
    whole at this width, one line per arm instead."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col, justify in (
        ("arm", "left"),
        ("success", "left"),
        ("clusters", "right"),
        ("trials", "right"),
        ("unresolved", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    rows = []
    for name, a in report["arms"].items():
        done = f"{a['trials_completed']}/{a['trials_scheduled']}"
        row = (name, rate_text(a.get("success")), str(a["clusters"]), done)
        rows.append((*row, str(a["trials_unresolved"])))
        table.add_row(*rows[-1])
    if keep_words_whole(table, console):
        console.print(table)
        return
    for name, success, clusters, done, unresolved in rows:
        _say(console, f"{name}: {success}")
        _say(console, f"{clusters} clusters, {done} trials, {unresolved} unresolved", indent=2)


def _comparison(console: Console, report: Report) -> None:
    """The primary comparison with its fixed/broke table and the must-never checks beside
    it; without a comparison, the must-never checks of the run's one arm alone."""
    c = report.get("comparison")
    if not c or c.get("estimate") is None:
        if c:
            head = f"{c['candidate_arm']} − {c['baseline_arm']}"
            _say(console, f"{head}: no task was run by both arms, nothing to compare")
        for line in must_never_lines(report):
            _say(console, line)
        return
    head = f"{c['candidate_arm']} − {c['baseline_arm']}"
    _say(
        console,
        f"{head}: {delta_text(c)} (n={c.get('n_tasks')} tasks in {c.get('n_clusters')} clusters)",
        style="bold",
    )
    _say(console, f"{c.get('test')}: p={p_value(c.get('p_value'))}", indent=2)
    _say(console, f"tasks: {pair_table_text(c, report)}", indent=2)
    for line in must_never_lines(report):
        _say(console, line, indent=2)


def _gate(console: Console, gate: GateResult | str | None) -> None:
    if gate is None:
        return
    if not isinstance(gate, dict):
        _say(console, gate_text(gate), style="red")
        return
    bad = "red" if gate["verdict"] != "inconclusive" else "yellow"
    _say(console, gate_text(gate), style="green" if gate["may_ship"] else bad)
    _say(console, gate_rule_text(gate), indent=2)
    if not gate["may_ship"]:  # what blocks it beyond the bounds above (must-never, coverage)
        stated = {(gate.get("primary") or {}).get("why"), (gate.get("threshold") or {}).get("why")}
        for reason in [r for r in gate["reasons"] if r not in stated][:3]:
            _say(console, reason, indent=2)


def gate_rule_text(gate: GateResult) -> str:
    """The gate's rule and the bounds it read, in the units the report uses elsewhere."""
    pol = gate["policy"]
    level = f"{pol['sides']} at {pct(pol['confidence'], 0)}"
    th = gate.get("threshold")
    fixed = (gate.get("quantity") or {}).get("corrected")
    read = " corrected for judge error" if fixed else ""
    if th is not None:
        b = fixed or th
        return (
            f"rule: threshold, {gate['candidate']} above {pct(pol['bar'])}, {level}: "
            f"bounds{read} [{pct(b.get('lo'))}, {pct(b.get('hi'))}]"
        )
    margin = pol.get("margin")
    rule = pol["rule"] + (f", margin {points(margin, signed=False)} pts" if margin else "")
    p = fixed or gate.get("primary") or {}
    bounds = f"[{signed_points(p.get('lo'))}, {signed_points(p.get('hi'))}]"
    return f"rule: {rule}, {level}: bounds{read} {bounds}"


def gate_text(gate: GateResult | str) -> str:
    """The gate's verdict in one line: whether it may ship and the exit code."""
    if not isinstance(gate, dict):
        return "gate: declared but not evaluated; `harness gate RUN` says why"
    ship = "may ship" if gate["may_ship"] else "do not ship"
    label = gate.get("verdict_label", gate["verdict"])
    return f"gate: {label.upper()}, {ship} (`harness gate` exits {gate['exit_code']})"


def _unresolved(console: Console, report: Report) -> None:
    arms = report["arms"]
    counts = ", ".join(
        f"{name} {a['trials_unresolved']} of {a['trials_completed']}" for name, a in arms.items()
    )
    _say(console, f"unresolved trials (no verdict): {counts}")
    for name, a in arms.items():
        lines = causes_lines(a)
        if not lines:
            continue
        _say(console, f"why, {name} (`harness view` shows each trial):", indent=2)
        shown = lines[:SUMMARY_CAUSES]
        for line in shown:
            _say(console, line, indent=4)
        if len(lines) > len(shown):
            _say(console, f"and {len(lines) - len(shown)} more in --section unresolved", indent=4)


def merged_warnings(report: Report) -> list[str]:
    """The report's warnings, one line per text: 'a: X' and 'b: X' become 'a, b: X'."""
    arms = set(report["arms"])
    merged: dict[str, list[str]] = {}
    for w in report.get("warnings", []):
        name, sep, text = w.partition(": ")
        if sep and name in arms:
            merged.setdefault(text, []).append(name)
        else:
            merged.setdefault(w, [])
    return [f"{', '.join(names)}: {text}" if names else text for text, names in merged.items()]
