"""Layering: no import cycles in harness/ or graders/, and config imports nothing above it.

The graph holds module-level imports by default; imports inside functions are added for the
layering checks, and ``TYPE_CHECKING`` imports for the type-only check (neither can deadlock
an import, but both tie layers together). Importing ``a.b.c`` also
runs the ``__init__`` of every package on the way that the importer is not already inside.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("harness", "graders")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(
    tree: ast.Module, deferred: bool, type_only: bool = False
) -> list[ast.Import | ast.ImportFrom]:
    """Imports executed when the module loads: module body and plain if/try blocks; with
    ``deferred``, also those inside functions and classes; with ``type_only``, also those
    under ``if TYPE_CHECKING:`` (a type-only import is still a dependency between layers)."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        elif deferred and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.With | ast.AsyncWith
        ):
            todo += node.body
        elif deferred and isinstance(node, ast.For | ast.AsyncFor | ast.While):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.If):
            if type_only or "TYPE_CHECKING" not in ast.unparse(node.test):
                todo += node.body
            todo += node.orelse
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
            for handler in node.handlers:
                todo += handler.body
    return out


@functools.cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def import_graph(deferred: bool = False, type_only: bool = False) -> dict[str, set[str]]:
    files = {_module_name(p): p for root in ROOTS for p in (REPO / root).rglob("*.py")}
    packages = {name for name, p in files.items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if name in packages else name.rpartition(".")[0]
        inside = {".".join(package.split(".")[:i]) for i in range(1, package.count(".") + 2)}
        for node in _imports(_parse(path), deferred, type_only):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                if target not in files:
                    continue
                parts = target.split(".")
                for i in range(1, len(parts)):  # the packages on the way
                    parent = ".".join(parts[:i])
                    if parent in packages and parent not in inside:
                        graph[name].add(parent)
                if target != name and target not in inside:  # an ancestor is loaded already
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_no_cycles_through_deferred_imports() -> None:
    """Imports inside functions must not hide a cycle either: layers stay layers."""
    assert cycles(import_graph(deferred=True)) == []


def test_no_cycles_counting_type_only_imports() -> None:
    """A ``TYPE_CHECKING`` import cannot deadlock, but a circle of them is one layer split in
    two: counted here too, so every layer stays layered (none is allowed: the run side's
    circles went with RunContext's own module and the Docker container's narrow client)."""
    assert cycles(import_graph(deferred=True, type_only=True)) == []


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = import_graph()
    graph["harness.errors"] = {*graph["harness.errors"], "harness.trial"}
    assert any("harness.errors" in c and "harness.trial" in c for c in cycles(graph))


def test_config_imports_nothing_above_it() -> None:
    """Config is plain data: it may use errors and itself, never registries or backends."""
    allowed = {"harness", "harness.errors", "harness.exitcodes"}
    for name, targets in import_graph(deferred=True).items():
        if name.startswith("harness.config"):
            above = {t for t in targets if not t.startswith("harness.config") and t not in allowed}
            assert not above, f"{name} imports {sorted(above)}"
