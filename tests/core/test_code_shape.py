"""Size limits that keep the code readable in an afternoon: no module in harness/ or graders/
over 500 lines, and no function over 80 lines unless its docstring says why ("Long
because ..."). Both had crept back once after being met, which is why they are tested."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for root in ("harness", "graders") for p in (REPO / root).rglob("*.py"))
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _long_functions(source: str, name: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            reason = "Long because" in (ast.get_docstring(node) or "")
            if length > MAX_FUNCTION_LINES and not reason:
                out.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return out


def test_sources_found() -> None:
    assert len(SOURCES) > 100


def test_no_module_over_500_lines() -> None:
    big = [
        f"{p.relative_to(REPO)} ({n} lines)"
        for p in SOURCES
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not big, "split these modules: " + ", ".join(big)


def test_no_long_function_without_a_reason() -> None:
    long = [f for p in SOURCES for f in _long_functions(p.read_text(), str(p.relative_to(REPO)))]
    assert not long, "shorten these or say 'Long because ...' in the docstring: " + ", ".join(long)


@pytest.mark.parametrize(("docstring", "found"), [("Long because x.", 0), ("Does y.", 1)])
def test_the_function_check_sees_length_and_reason(docstring: str, found: int) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f'def f():\n    """{docstring}"""\n{body}\n'
    assert len(_long_functions(source, "m.py")) == found
