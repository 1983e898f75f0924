"""A subset run's lines: the full suite's score per arm (labelled as estimated from n of N,
model-based naming the fit where it is), the paired delta, what was saved and what it cost
in precision. The terminal summary and the Markdown report print the same lines."""

from __future__ import annotations

from harness.report.records import Report
from harness.report.render.numbers import MISSING, UNKNOWN, money, pct, signed_points


def _tokens(x: float | None) -> str:
    return UNKNOWN if x is None else f"{x:,.0f}"


def subset_lines(report: Report) -> list[str]:
    """Nothing for a full run."""
    section = report.get("subset")
    if not section:
        return []
    lines = [f"{section.get('label', '')}:"]
    for name, est in (section.get("arms") or {}).items():
        if est.get("estimate") is None:
            lines.append(f"  {name}: no counted trials")
            continue
        theta = ""
        if est.get("theta") is not None:
            theta = f"; ability {est['theta']:.2f} (SE {est.get('theta_se') or 0:.2f})"
        lines.append(
            f"  {name}: full suite {pct(est['estimate'])} [{pct(est.get('lo'))}, {pct(est.get('hi'))}] "
            f"(n={est.get('n')} of {est.get('N')} tasks{theta})"
        )
    delta = section.get("delta")
    if delta and delta.get("estimate") is not None:
        lines.append(
            f"  {section.get('candidate')} − {section.get('baseline')}: "
            f"{signed_points(delta['estimate'])} [{signed_points(delta.get('lo'))}, "
            f"{signed_points(delta.get('hi'))}] on the paired subset"
        )
    s = section.get("saving") or {}
    if s:
        lines.append(
            f"  saved: ran {s.get('tasks')} of {s.get('tasks_full')} tasks, "
            f"{s.get('trials')} of {s.get('trials_full')} trials; tokens "
            f"{_tokens(s.get('tokens'))} of ~{_tokens(s.get('tokens_full'))}, cost "
            f"{money(s.get('cost_usd'))} of ~{money(s.get('cost_full_usd'))} "
            "(full suite projected from this run's per-task use)"
        )
        width, full = s.get("width"), s.get("width_full")
        ratio = f" ({width / full:.1f}x)" if width and full else ""
        lines.append(
            f"  precision: interval width {pct(width) if width else MISSING} against "
            f"~{pct(full) if full else MISSING} for a full run{ratio}"
        )
    return lines
