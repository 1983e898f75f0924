"""The Jinja2 environment every HTML page is rendered with: autoescaping on, templates shipped
as package data (``harness/report/templates``, and the viewer's own directory on top).

Autoescaping means a run id, task id, tool output or grader text can never become markup;
the only unescaped strings are the SVG plots matplotlib draws (marked ``Markup`` where they
are made) and the CSS and script the templates include verbatim.
"""

from __future__ import annotations

import functools
from typing import Any

from harness.report.render.numbers import money, num, pct, signed_points

FORMATS = {"pct": pct, "pp": signed_points, "num": num, "money": money}


def fmt(x: Any, kind: str = "pct") -> str:
    """Format a number as 'pct' (73.0%), 'pp' (+1.2 pts), 'num' or 'money'."""
    return FORMATS[kind](x)


def interval(obj: Any) -> tuple[float | None, float | None, float | None]:
    """(estimate, lo, hi) of a rate or delta record; a bare number has no interval."""
    if isinstance(obj, int | float) and not isinstance(obj, bool):
        return float(obj), None, None
    if not isinstance(obj, dict):
        return None, None, None

    def f(x: Any) -> float | None:
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None

    return f(obj.get("estimate")), f(obj.get("lo")), f(obj.get("hi"))


def _finalize(value: Any) -> Any:
    """None renders as nothing (not the text 'None')."""
    return "" if value is None else value


@functools.cache
def environment(*packages: str):
    """An environment loading templates from ``packages`` (first wins), then the report's."""
    from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined

    loaders = [PackageLoader(p, "templates") for p in (*packages, "harness.report")]
    env = Environment(
        loader=ChoiceLoader(loaders),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        finalize=_finalize,
    )
    env.filters.update(fmt=fmt, interval=interval, num=num, pct=pct, pp=signed_points, money=money)
    return env


def render_template(name: str, *, packages: tuple[str, ...] = (), **context: Any) -> str:
    """Render one template with the shared environment."""
    return environment(*packages).get_template(name).render(**context)
