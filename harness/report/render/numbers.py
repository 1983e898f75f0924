"""Number formatting for the HTML pages (report and viewer), used as Jinja2 filters.

Each returns plain text; the templates escape it. A missing or NaN number shows as "—".
"""

from __future__ import annotations

import json
import math
from typing import Any


def pct(x: Any, digits: int = 1) -> str:
    if not isinstance(x, int | float) or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * x:.{digits}f}%"


def signed_pp(x: Any, digits: int = 1) -> str:
    """A difference of rates in percentage points, with its sign."""
    if not isinstance(x, int | float) or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * x:+.{digits}f} pp"


def num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "—"
        return f"{x:,.{digits}g}" if abs(x) < 1e-3 and x else f"{x:,.{digits}f}"
    return str(x)


def money(x: Any) -> str:
    if not isinstance(x, int | float):
        return "—"
    return f"${x:,.4f}" if abs(x) < 1 else f"${x:,.2f}"


def pretty_json(value: Any, limit: int = 20_000) -> str:
    text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "\n…"
