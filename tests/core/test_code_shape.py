"""Size limits that keep the code readable in an afternoon: no module in harness/ or graders/
over 500 lines, and no function over 80 lines unless a ``# long: <reason>`` comment just above
it (above its decorators) says why. Both had crept back once after being met, which is why
they are tested. The reason is a comment, never docstring text: docstrings of commands are
the CLI's help, and "Long because ..." once opened ``harness run --help``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for root in ("harness", "graders") for p in (REPO / root).rglob("*.py"))
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _has_reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``# long:`` comment block ends on the line above the function (or its decorators)."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    above = first - 1
    while above >= 0 and lines[above].strip().startswith("#   "):
        above -= 1  # the reason's continuation lines
    return above >= 0 and lines[above].strip().startswith("# long: ")


def _long_functions(source: str, name: str) -> list[str]:
    out = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES and not _has_reason(lines, node):
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
    assert not long, "shorten these or put '# long: <reason>' above them: " + ", ".join(long)


def test_no_docstring_carries_a_length_reason() -> None:
    """The reason for a long function is for readers of the code, never for users of --help."""
    found = [
        f"{p.relative_to(REPO)}:{node.lineno} {node.name}"
        for p in SOURCES
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and "long because" in (ast.get_docstring(node) or "").lower()
    ]
    assert not found, "move the reason into a '# long:' comment: " + ", ".join(found)


@pytest.mark.parametrize(
    ("above", "found"),
    [
        ("# long: x.\n", 0),
        ("# long: a reason that\n#   goes on.\n", 0),
        ("# long: x.\n@decorator\n", 0),
        ("", 1),
        ("# unrelated comment\n", 1),
        ("# long: x.\n\n", 1),  # a blank line detaches the reason from the function
    ],
)
def test_the_function_check_sees_length_and_reason(above: str, found: int) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f'{above}def f():\n    """Does y."""\n{body}\n'
    assert len(_long_functions(source, "m.py")) == found
