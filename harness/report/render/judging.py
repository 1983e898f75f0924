"""The judge views, terminal and Markdown, of ``harness.analysis.judging.judge_summary``.

Render only: every number comes from the summary dict and is spelled by the one
formatting module (``numbers``).
"""

from __future__ import annotations

import textwrap
from typing import Any

from harness.report.render.fmt import fit_lines
from harness.report.render.numbers import ci, count, delta_text, money, num, pct, rate_text

METRICS = ("accuracy", "sensitivity", "specificity", "precision", "f1")


def _agreement_lines(a: dict[str, Any]) -> list[str]:
    lines = [f"Judge against people: {count(a['n'])} trials with a verdict and a human label"]
    if a.get("tied_labels"):
        lines.append(f"  ({a['tied_labels']} trials left out: their labellers were split evenly)")
    if a.get("note"):
        return [*lines, *_wrapped(a["note"])]
    for name in METRICS:
        lines += _metric_lines("  ", name, a.get(name), a["missing"])
    lines += _chance_lines("  ", a["cohen_kappa"], a.get("krippendorff_alpha"))
    c = a["confusion"]
    lines += [
        "  confusion      human pass  human fail",
        f"    judge pass   {c['judge_pass_human_pass']:>10}  {c['judge_pass_human_fail']:>10}",
        f"    judge fail   {c['judge_fail_human_pass']:>10}  {c['judge_fail_human_fail']:>10}",
    ]
    return lines


def _chance_lines(indent: str, k: dict[str, Any] | None, alpha: dict[str, Any] | None) -> list[str]:
    """Cohen's κ of the judge against people, and Krippendorff's α among people when
    several labelled the same trials (its own line each: 80 columns)."""
    lines = []
    if k:
        lines.append(
            f"{indent}{'Cohen kappa':<12} {num(k['estimate'])} [{num(k['lo'])}, "
            f"{num(k['hi'])}] (n={k['n']} trials)"
        )
    if alpha:
        lines.append(
            f"{indent}{'Krippendorff alpha':<12} {num(alpha['estimate'])} [{num(alpha['lo'])}, "
            f"{num(alpha['hi'])}] among {alpha['labellers']} people (n={alpha['n']} trials)"
        )
    return lines


def _wrapped(note: str) -> list[str]:
    """A note, indented, in lines of at most 80 columns."""
    return textwrap.wrap(note, 80, initial_indent="  ", subsequent_indent="    ")


def _metric_lines(indent: str, name: str, r: Any, missing: dict[str, str]) -> list[str]:
    """One metric with n and interval, or 'undefined' and why (on its own line: 80 columns)."""
    if r:
        return [f"{indent}{name:<12} {rate_text(r, 'trial')}"]
    why = missing.get(name, "")
    return [f"{indent}{name:<12} undefined", *([f"{indent}  ({why})"] if why else [])]


def _criteria_lines(criteria: dict[str, Any]) -> list[str]:
    lines = ["Judge against people, per criterion they labelled"]
    for cid, r in criteria.items():
        lines.append(f"  {cid}: {count(r['n'])} trials labelled")
        if r.get("tied_labels"):
            lines.append(f"    ({r['tied_labels']} left out: their labellers were split evenly)")
        for name in ("accuracy", "sensitivity", "specificity"):
            if r["n"]:
                lines += _metric_lines("    ", name, r.get(name), r["missing"])
        lines += _chance_lines("    ", r.get("cohen_kappa"), r.get("krippendorff_alpha"))
        if r["n"]:
            c = r["confusion"]
            lines += [
                f"    judge pass: {c['judge_pass_human_pass']} human pass, "
                f"{c['judge_pass_human_fail']} human fail",
                f"    judge fail: {c['judge_fail_human_pass']} human pass, "
                f"{c['judge_fail_human_fail']} human fail",
            ]
    return lines


def _corrected_lines(c: dict[str, Any]) -> list[str]:
    lines = [f"Pass rates corrected for judge error (calibration n={c['n_calibration']})"]
    if c.get("note"):
        return [*lines, *_wrapped(c["note"])]
    lines.append(
        f"  judge sensitivity {pct(c['sensitivity'])}, specificity {pct(c['specificity'])} "
        "on the calibration set"
    )
    for arm, r in c["arms"].items():
        raw, fixed = r["raw"], r["corrected"]
        lines.append(f"  {arm}")
        lines.append(f"    judged     {pct(raw['estimate'])} {ci(raw)} ({_units(raw)})")
        lines.append(
            f"    corrected  {pct(fixed['estimate'])} [{pct(fixed['lo'])}, {pct(fixed['hi'])}] "
            f"({_units(raw)}; {fixed['n_calibration']} labels)"
        )
        if fixed.get("warning"):
            lines.append(f"    warning: {fixed['warning']}")
    d = c.get("delta")
    if d:
        lines.append(f"  {d['candidate']} − {d['baseline']}")
        lines.append(f"    judged     {delta_text(d['raw'])}")
        lines.append(f"    corrected  {delta_text(d['corrected'])}")
    return lines


def _units(r: dict[str, Any]) -> str:
    if r.get("unit") == "cluster":
        return f"n={r['n']} tasks in {r['n_units']} clusters"
    return f"n={r['n']} tasks"


def _judge_lines(j: dict[str, Any]) -> list[str]:
    s = j["self_disagreement"]
    lines = ["The judge itself"]
    if s["n"]:
        lines.append(
            f"  self-disagreement {pct(s['rate'])} [{pct(s['lo'])}, {pct(s['hi'])}] "
            f"(n={s['n']} criteria judged more than once)"
        )
    else:
        lines.append("  self-disagreement: not measured (samples: 1)")
    for arm, c in j["cost"].items():
        if not c["judged_trials"]:
            lines.append(f"  {arm}: no judged trials")
            continue
        lines.append(f"  {arm}: {c['judged_trials']} judged trials, {c['judge_calls']} judge calls")
        lines.append(
            f"    per trial: judge {money(c['judge_cost_per_trial_usd'])}, "
            f"agent {money(c['agent_cost_per_trial_usd'])}"
        )
        if c.get("explored_trials"):
            lines.append(
                f"    workspace tools: {c['tool_calls']} tool calls in {c['explored_trials']} "
                f"trials, a cap hit in {c['tool_capped_trials']}"
            )
    lines.append(f"  judge setups: {', '.join(j['setups']) or 'none'}")
    return lines


def judge_head(summary: dict[str, Any]) -> str:
    """The section's first line: how many trials the judge graded."""
    return (
        f"{summary['judged_trials']} judged of {summary['resolved_trials']} resolved trials "
        f"({summary['unresolved_trials']} unresolved)"
    )


def judge_line(summary: dict[str, Any]) -> str:
    """The judge in one line for a report's first screen: what it graded, and the rates
    corrected for its error when people labelled enough trials."""
    calls = sum(c["judge_calls"] for c in summary["judge"]["cost"].values())
    line = f"judge: {judge_head(summary)}, {calls} judge calls"
    c = summary["corrected"]
    if not c.get("arms"):
        return f"{line}; {c.get('note', 'not corrected')}"
    arms = ", ".join(
        f"{arm} {pct(r['corrected']['estimate'])} [{pct(r['corrected']['lo'])}, "
        f"{pct(r['corrected']['hi'])}]"
        for arm, r in c["arms"].items()
    )
    return f"{line}; corrected for judge error ({c['n_calibration']} labels): {arms}"


def judge_blocks(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, lines) of each block: against people, corrected rates, the judge itself;
    the lines every view prints (terminal, Markdown, HTML)."""
    blocks = [("Against people", _agreement_lines(summary["agreement"]))]
    if summary.get("criteria"):
        blocks.append(("Per criterion", _criteria_lines(summary["criteria"])))
    return [
        *blocks,
        ("Corrected rates", _corrected_lines(summary["corrected"])),
        ("The judge itself", _judge_lines(summary["judge"])),
    ]


def judge_text(summary: dict[str, Any]) -> str:
    """The terminal view."""
    blocks = [[judge_head(summary)], *(lines for _, lines in judge_blocks(summary))]
    return "\n\n".join("\n".join(fit_lines(b)) for b in blocks) + "\n"


def judge_markdown(summary: dict[str, Any], level: int = 2) -> str:
    """The Markdown view: the same lines, as a section of pre-formatted text per block
    (``level``: the heading level of the section; its blocks one below)."""
    parts = ["#" * level + " Judge", "", judge_head(summary), ""]
    for title, lines in judge_blocks(summary):
        parts += ["#" * (level + 1) + f" {title}", "", "```", *lines, "```", ""]
    return "\n".join(parts)
