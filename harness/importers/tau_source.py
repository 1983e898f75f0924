"""Reading a tau-bench checkout without running any of it: its task lists, terminating
tools and data tables, parsed as Python syntax (``ast``), never imported (a checkout is
the user's data, and its modules import LLM clients this process does not need)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from harness.errors import ConfigError


class TauAction(TypedDict):
    """One gold action of a tau-bench task: a tool's name and its arguments (free-form)."""

    name: str
    kwargs: dict[str, object]


@dataclass
class TauTask:
    """The parts of a tau-bench ``Task(...)`` the import reads."""

    index: int
    user_id: str
    instruction: str
    actions: list[TauAction]
    outputs: list[str]


def _value(node: ast.expr, file: Path) -> Any:
    """A literal, or a call such as ``Task(...)`` / ``Action(...)`` read as its keywords."""
    if isinstance(node, ast.Call):
        if node.args:
            raise ConfigError(str(file), "", f"line {node.lineno}: positional arguments")
        return {k.arg: _value(k.value, file) for k in node.keywords if k.arg}
    if isinstance(node, ast.List):
        return [_value(e, file) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ConfigError(str(file), "", f"line {node.lineno}: a ** spread in a dict")
        return {
            _value(k, file): _value(v, file)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ConfigError(
            str(file), "", f"line {node.lineno}: not a literal ({ast.unparse(node)[:60]})"
        ) from None


def read_tasks(file: Path) -> list[TauTask]:
    """The task list of a ``tasks_<split>.py`` file: its top-level list of ``Task(...)``."""
    try:
        tree = ast.parse(file.read_text(), filename=str(file))
    except (OSError, SyntaxError) as exc:
        raise ConfigError(str(file), "", f"cannot read the task list: {exc}") from None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List):
            raw = _value(stmt.value, file)
            out = []
            for i, t in enumerate(raw):
                try:
                    out.append(
                        TauTask(
                            index=i,
                            user_id=str(t["user_id"]),
                            instruction=str(t["instruction"]),
                            actions=[
                                {"name": a["name"], "kwargs": dict(a["kwargs"])}
                                for a in t["actions"]
                            ],
                            outputs=[str(o) for o in t.get("outputs", [])],
                        )
                    )
                except (KeyError, TypeError) as exc:
                    raise ConfigError(str(file), f"task {i}", f"missing {exc}") from None
            return out
    raise ConfigError(str(file), "", "no top-level list of tasks")


def terminate_tools(env_py: Path) -> list[str]:
    """``self.terminate_tools = [...]`` in the domain's env.py (tau-bench's episode end)."""
    tree = ast.parse(env_py.read_text(), filename=str(env_py))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "terminate_tools":
                    return [str(x) for x in ast.literal_eval(node.value)]
    return []


def data_tables(data_init: Path) -> list[tuple[str, str]]:
    """(table, json file) pairs of the domain's ``load_data``: which file each key reads."""
    tree = ast.parse(data_init.read_text(), filename=str(data_init))
    var_file: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            files = [
                str(c.value)
                for item in node.items
                for c in ast.walk(item.context_expr)
                if isinstance(c, ast.Constant) and str(c.value).endswith(".json")
            ]
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and files:
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            var_file[target.id] = files[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            pairs = []
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if not (isinstance(k, ast.Constant) and isinstance(v, ast.Name)):
                    continue
                if v.id in var_file:
                    pairs.append((str(k.value), var_file[v.id]))
            if pairs:
                return pairs
    raise ConfigError(str(data_init), "load_data", "cannot tell which JSON file each table reads")
