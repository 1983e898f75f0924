"""The one formatting module: how every renderer spells a number.

Terminal, Markdown, JUnit, the HTML report (as Jinja2 filters) and the viewer all format
through these functions, so one quantity reads the same everywhere: a rate as ``73.0%``, a
difference of rates as ``+3.0 pts``, an absent number as ``—`` and an unknown amount of
money (or tokens) as ``unknown``, never ``$0``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from harness.stats.records import Interval

MISSING = "—"
"""A number that does not exist here (no trials, no interval, not applicable)."""
UNKNOWN = "unknown"
"""A quantity that exists but was not measured (a cost without a price or usage)."""
POINTS = "pts"
"""The unit of a difference of two rates: percentage points."""


def _absent(x: Any) -> bool:
    return not isinstance(x, int | float) or isinstance(x, bool) or math.isnan(x)


def pct(x: Any, digits: int = 1) -> str:
    """A rate in percent: ``73.0%``."""
    return MISSING if _absent(x) else f"{100 * x:.{digits}f}%"


def points(x: Any, signed: bool = True, digits: int = 1) -> str:
    """A difference of rates in percentage points, the number alone: ``+3.0``."""
    if _absent(x):
        return MISSING
    return f"{100 * x:+.{digits}f}" if signed else f"{100 * x:.{digits}f}"


def signed_points(x: Any, digits: int = 1) -> str:
    """A difference of rates with its unit: ``+3.0 pts``."""
    return MISSING if _absent(x) else f"{points(x, True, digits)} {POINTS}"


def ci(r: Interval | None, digits: int = 1) -> str:
    """'[lo, hi]' in percent, or '' when the record has no interval."""
    if not r or r.get("lo") is None or r.get("hi") is None:
        return ""
    return f"[{pct(r['lo'], digits)}, {pct(r['hi'], digits)}]"


def rate_text(r: Interval | None, unit: str | None = None) -> str:
    """'73.0% [67.8%, 78.3%] (n=10000 tasks)': a rate is never shown without n and interval."""
    if not r or r.get("estimate") is None:
        return "no counted trials"
    u = unit or r.get("unit", "task")
    return f"{pct(r['estimate'])} {ci(r)} (n={r['n']} {u}s)"


def delta_text(r: Interval | None) -> str:
    """A difference in percentage points with its interval: ``+3.0 pts [-1.2 pts, +7.1 pts]``."""
    if not r or r.get("estimate") is None:
        return MISSING
    lo, hi = signed_points(r.get("lo")), signed_points(r.get("hi"))
    return f"{signed_points(r['estimate'])} [{lo}, {hi}]"


def money(x: Any) -> str:
    """US dollars: 4 decimals under $1, cents under $100, whole dollars above; unknown
    (never $0) when the amount was not measured."""
    if _absent(x):
        return UNKNOWN
    if abs(x) >= 100:
        return f"${x:,.0f}"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    return f"${x:.4f}"


def money_interval(r: Interval | None) -> str:
    """A cost estimate with its interval, or unknown."""
    if not r or r.get("estimate") is None:
        return UNKNOWN
    if r.get("lo") is None:
        return money(r["estimate"])
    return f"{money(r['estimate'])} [{money(r['lo'])}, {money(r['hi'])}]"


def count(x: Any) -> str:
    """A whole number with thousands separators."""
    return MISSING if _absent(x) else f"{int(x):,}"


def p_value(p: Any) -> str:
    return MISSING if _absent(p) else f"{p:.3g}"


def num(x: Any, digits: int = 3) -> str:
    """Any value for a table cell: ints with separators, floats to ``digits`` places."""
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return MISSING
        return f"{x:,.{digits}g}" if abs(x) < 1e-3 and x else f"{x:,.{digits}f}"
    return str(x)


def pretty_json(value: Any, limit: int = 20_000) -> str:
    text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "\n…"
