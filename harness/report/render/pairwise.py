"""The pairwise views, terminal and Markdown, of ``harness.pairwise.summary.pairwise_summary``.

Render only: every number comes from the summary dict and is spelled by ``numbers``.
"""

from __future__ import annotations

from typing import Any

from harness.report.render.fmt import fit_lines
from harness.report.render.numbers import ci, count, money, pct


def _units(r: dict[str, Any]) -> str:
    if r.get("unit") == "cluster":
        return f"n={r['n']} tasks in {r['n_units']} clusters"
    return f"n={r['n']} tasks"


def _bias_text(b: dict[str, Any]) -> str:
    return (
        f"{pct(b['rate'])} [{pct(b['lo'])}, {pct(b['hi'])}] "
        f"({b['biased']} of {b['n']} pairs picked the same position both times)"
    )


def _pair_lines(p: dict[str, Any]) -> list[str]:
    lines = [f"  {p['arm_a']} vs {p['arm_b']}"]
    w = p["win_rate"]
    if w is None:
        lines.append("    no resolved comparisons")
    else:
        lines.append(
            f"    {p['arm_a']} win rate {pct(w['estimate'])} {ci(w)} "
            f"({p['comparisons']} comparisons, {_units(w)}; "
            f"{p['wins']} won, {p['ties']} tied, {p['losses']} lost)"
        )
        if w.get("warning"):
            lines.append(f"    warning: {w['warning']}")
        lines.append(f"    position bias {_bias_text(p['position_bias'])}")
    if p["unresolved"]:
        lines.append(
            f"    {p['unresolved']} pair(s) unresolved: the judge named no winner in one "
            "order (left out, never a win)"
        )
    return lines


def _rating_lines(r: dict[str, Any] | None) -> list[str]:
    if r is None:
        return []
    lines = ["Bradley–Terry ratings (Elo scale, mean 1000)"]
    if "note" in r:
        return [*lines, f"  no fit: {r['note']}"]
    ranked = sorted(r["arms"].items(), key=lambda kv: -kv[1]["rating"])
    for arm, x in ranked:
        lines.append(f"  {arm:<16} {x['rating']:7.0f} [{x['lo']:.0f}, {x['hi']:.0f}]")
    lines.append(
        f"  {count(r['n'])} comparisons in {r['n_clusters']} clusters; intervals from "
        f"{count(r['resamples'])} cluster-bootstrap resamples"
        + (
            f" ({r['degenerate']} had an arm winning or losing everything)"
            if r["degenerate"]
            else ""
        )
    )
    return lines


def _judge_lines(summary: dict[str, Any]) -> list[str]:
    j, new = summary["judge"], summary.get("new_calls")
    lines = ["The pairwise judge"]
    calls = f"  {count(j['calls'])} judge calls"
    if new is not None:
        calls += f" ({count(new)} new, {count(summary.get('reused', 0))} reused from the store)"
    lines.append(calls)
    if j["unresolved_calls"]:
        lines.append(f"  {j['unresolved_calls']} replies named no winner (unresolved)")
    tokens = "unknown" if j["tokens_in"] is None else f"{count(j['tokens_in'])} in"
    if j["tokens_out"] is not None:
        tokens += f", {count(j['tokens_out'])} out"
    lines.append(f"  tokens {tokens}; cost {money(j['cost_usd'])}")
    lines.append(f"  model {', '.join(j['models']) or '—'}; setup {', '.join(j['setups']) or '—'}")
    for why, n in (summary.get("skipped") or {}).items():
        lines.append(f"  skipped {n} pair(s): {why}")
    return lines


def pairwise_head(summary: dict[str, Any]) -> str:
    """The section's first line."""
    if summary.get("run_id") is None and summary.get("runs"):
        runs = ", ".join(summary["runs"])
        head = f"Pairwise judging across runs {runs} (each pair judged in both orders)"
    else:
        head = f"Pairwise judging of run {summary['run_id']} (each pair judged in both orders)"
    if summary.get("other_setups"):
        head += f"; {summary['other_setups']} other judge setup(s) stored, not shown"
    return head


def pairwise_blocks(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, lines) of each block: win rates, ratings (three arms or more), the judge;
    the lines every view prints (the command, terminal report, Markdown, HTML)."""
    rates = [f"  note: {n}" for n in summary.get("notes") or []]
    rates += [line for p in summary["pairs"] for line in _pair_lines(p)]
    b = summary["position_bias"]
    if b is not None and len(summary["pairs"]) > 1:
        rates.append(f"  all pairs: position bias {_bias_text(b)}")
    blocks = [("Win rates", rates)]
    if summary["ratings"] is not None:
        blocks.append(("Ratings", _rating_lines(summary["ratings"])))
    blocks.append(("The judge", _judge_lines(summary)))
    return blocks


def pairwise_line(summary: dict[str, Any]) -> str:
    """The pairwise judge in one line for a report's first screen: the ratings with three
    arms or more, else the one pair's win rate."""
    r = summary["ratings"]
    if r is not None and "arms" in r:
        ranked = sorted(r["arms"].items(), key=lambda kv: -kv[1]["rating"])
        shown = ", ".join(
            f"{a} {x['rating']:.0f} [{x['lo']:.0f}, {x['hi']:.0f}]" for a, x in ranked
        )
        return f"pairwise judge: Bradley–Terry ratings {shown}"
    p = summary["pairs"][0]
    w = p["win_rate"]
    if w is None:
        return f"pairwise judge: {p['arm_a']} vs {p['arm_b']}: no resolved comparisons"
    return (
        f"pairwise judge: {p['arm_a']} wins {pct(w['estimate'])} {ci(w)} against "
        f"{p['arm_b']} ({p['comparisons']} comparisons)"
    )


def pairwise_text(summary: dict[str, Any]) -> str:
    """The terminal view."""
    blocks = pairwise_blocks(summary)
    blocks[0] = (blocks[0][0], [pairwise_head(summary), *blocks[0][1]])
    return "\n\n".join("\n".join(fit_lines(lines)) for _, lines in blocks) + "\n"


def pairwise_markdown(summary: dict[str, Any], level: int = 2) -> str:
    """The Markdown view: the same lines, one pre-formatted block per part (``level``: the
    section's heading level; its blocks one below)."""
    parts = ["#" * level + " Pairwise judging", "", pairwise_head(summary), ""]
    for title, lines in pairwise_blocks(summary):
        parts += ["#" * (level + 1) + f" {title}", "", "```", *lines, "```", ""]
    return "\n".join(parts)
