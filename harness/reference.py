"""docs/reference.md, generated from the typed models that read suite, task and environment
files, so the reference cannot drift from what the loader accepts.

    python -m harness.reference > docs/reference.md

Every field's row comes from its pydantic ``Field`` (type, default, bounds, description or
attribute docstring); each model's prose is its class docstring. ``tests/core/
test_reference.py`` regenerates the page and fails when it differs from the checked-in one,
or when a field has no description.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass
class Group:
    """Models documented together, under a heading of their own when they belong to one
    named thing (a grader, an agent), with the prose that explains them."""

    heading: str | None
    text: str = ""
    models: list[type[BaseModel]] = field(default_factory=list)


@dataclass
class Section:
    """One part of the page: a heading, an introduction, its groups."""

    title: str
    intro: str
    groups: list[Group] = field(default_factory=list)

    @property
    def models(self) -> list[type[BaseModel]]:
        return [m for g in self.groups for m in g.models]


# long: one entry per part of the page, each listing the models it documents.
def sections() -> list[Section]:
    """What the page documents, in reading order."""
    from graders import GRADERS, grader_class
    from harness.agents import AGENTS, agent_class
    from harness.config import env as interpolation
    from harness.config.models import (
        Arm,
        BudgetOverride,
        Budgets,
        EnvironmentSpec,
        Grading,
        ImageRecipe,
        Limits,
        ModelSettings,
        Price,
        Retries,
        Solution,
        StateSpec,
        Suite,
        Task,
        TaskFile,
        TaskStep,
        ToolCall,
        ToolServerSpec,
        ToolSpec,
        UserScript,
        Variant,
    )
    from harness.config.pairwise import SuitePairwise
    from harness.config.release import GatePolicy, PrimaryComparison, Repeats, ReportSettings
    from harness.config.task_parts import ServiceFiles
    from harness.pairwise.setup import PairwiseJudgeSetup
    from harness.sandbox import BACKENDS, backend_class

    graders = [grader_class(name) for name in GRADERS]
    agents = {name: agent_class(name) for name in AGENTS}
    backends = {n: backend_class(n) for n in BACKENDS if n != "local"}  # `local`: old name
    return [
        Section(
            "Suite file",
            "`harness run SUITE` reads one suite file: what to run, how often, against which "
            "arms, and how to read the results.",
            [
                Group(None, "", [Suite, Arm, ModelSettings, Price, Budgets, Retries, Limits]),
                Group(None, "", [ReportSettings, PrimaryComparison, GatePolicy, Repeats]),
                Group(None, "", [SuitePairwise, PairwiseJudgeSetup]),
                Group(
                    "Interpolation: `${VAR}` and `${VAR:-default}`",
                    _prose(interpolation.__doc__),
                ),
            ],
        ),
        Section(
            "Task file",
            "A task file holds one task, or several under `tasks:` with shared `defaults:` "
            "(nested mappings merge, other values replace).",
            [
                Group(
                    None,
                    "",
                    [
                        TaskFile,
                        Task,
                        Solution,
                        Grading,
                        ServiceFiles,
                        TaskStep,
                        ToolCall,
                        Variant,
                        UserScript,
                        BudgetOverride,
                    ],
                )
            ],  # fmt: skip
        ),
        Section(
            "Environment file",
            "`environments/NAME/environment.yaml`: what a task runs in. `name` must equal the "
            "folder's name; paths are relative to that folder and stay inside it.",
            [Group(None, "", [EnvironmentSpec, ImageRecipe, StateSpec, ToolSpec, ToolServerSpec])],
        ),
        Section(
            "Graders",
            "A task's `graders:` entries: `type` picks one, the other keys are its parameters. "
            "The task's verdict is the AND of its graders.",
            [
                Group(
                    f"`{g.type_name}`", _prose(inspect.getmodule(g).__doc__), _with_nested(g.Params)
                )
                for g in graders
            ],  # fmt: skip
        ),
        Section(
            "Agents",
            "An arm's `agent:` names one; its `params:` are checked against that agent's "
            "parameters (unknown keys are errors). Agents without parameters: "
            + ", ".join(f"`{n}`" for n, a in agents.items() if not a.Params.model_fields)
            + ".",
            [
                Group(f"`{n}`", _prose(inspect.getmodule(a).__doc__, until="Params"), [a.Params])
                for n, a in agents.items()
                if a.Params.model_fields
            ],
        ),
        Section(
            "Sandbox options",
            "The suite's `sandbox_options:`, checked against the chosen backend's options.",
            [
                Group(f"`{n}`", "", [b.Options])
                for n, b in backends.items()
                if b.Options.model_fields
            ],
        ),
    ]


# ------------------------------------------------------------------------------ rendering
def render() -> str:
    """The whole page (Markdown)."""
    out = [
        "# Reference: suite, task and environment files, graders, agents",
        "",
        "[← README](../README.md)",
        "",
        "Generated from the models that read the files (`python -m harness.reference > "
        "docs/reference.md`); a test fails when it differs from them. Every key not listed "
        "is an error that names it. Types: `int` and `float` are plain YAML numbers (an "
        '`int` field refuses `true` and `"3"`), `list[...]` a YAML list, `mapping` a YAML '
        "mapping; a default of `—` means the field is required.",
        "",
    ]
    seen: set[type[BaseModel]] = set()
    for section in sections():
        out += [f"## {section.title}", "", section.intro, ""]
        for group in section.groups:
            level = "###"
            if group.heading:
                out += [f"### {group.heading}", ""]
                if group.text:
                    out += [group.text, ""]
                level = "####"
            for model in group.models:
                if model not in seen:
                    seen.add(model)
                    out += _model_block(model, level)
                else:
                    name = model.__name__
                    out += [f"Parameters: [`{name}`](#{name.lower()}), as above.", ""]
    return "\n".join(out).rstrip() + "\n"


def undocumented() -> list[str]:
    """``Model.field`` of every documented field without a description."""
    missing = []
    for section in sections():
        for model in section.models:
            for name, info in _fields(model):
                if not (info.description or "").strip():
                    missing.append(f"{model.__name__}.{name}")
    return sorted(set(missing))


def _model_block(model: type[BaseModel], level: str) -> list[str]:
    lines = [f"{level} `{model.__name__}`", ""]
    doc = _prose(model.__doc__) if model.__doc__ and model.__doc__ != BaseModel.__doc__ else ""
    if doc:
        lines += [doc, ""]
    lines += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, info in _fields(model):
        key = info.alias or name
        cells = [f"`{key}`", _type(info.annotation), _default(info), _meaning(info)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return [*lines, ""]


def _fields(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo]]:
    """The model's fields; one redeclared without a description (a grader's ``type``)
    keeps its base model's."""
    for name, info in model.model_fields.items():
        if not info.description:
            inherited = next(
                (
                    b.model_fields[name].description
                    for b in model.__mro__[1:]
                    if isinstance(b, type)
                    and issubclass(b, BaseModel)
                    and name in b.model_fields
                    and b.model_fields[name].description
                ),
                None,
            )
            if inherited:
                info = FieldInfo.merge_field_infos(info, description=inherited)
        yield name, info


def _with_nested(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and the models its fields hold (rule and output records), in order."""
    found = [model]
    for _, info in _fields(model):
        for sub in _models_in(info.annotation):
            if sub not in found:
                found += [m for m in _with_nested(sub) if m not in found]
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _type(annotation: Any) -> str:
    origin = get_origin(annotation)
    if annotation is None or annotation is type(None):
        return "null"
    if origin is Literal:
        return " | ".join(f"`{a}`" for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        parts = [_type(a) for a in get_args(annotation) if a is not type(None)]
        nullable = type(None) in get_args(annotation)
        return " or ".join(parts) + (" or null" if nullable else "")
    if origin is list:
        return f"list[{_type(get_args(annotation)[0])}]"
    if origin is dict:
        return "mapping"
    from harness.config.models import GraderSpec

    if annotation is GraderSpec:  # one entry per grader type, documented under Graders
        return "[grader](#graders)"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if origin is not None and get_args(annotation):  # Annotated[...]
        return _type(get_args(annotation)[0])
    return {int: "int", float: "float", str: "str", bool: "bool", object: "any"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _default(info: FieldInfo) -> str:
    """The default as YAML would write it; `—` for a required field."""
    if info.is_required():
        return "—"
    if info.default_factory is not None:
        try:
            value = info.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(value, BaseModel):
            return "(its defaults)"
        return f"`{value!r}`" if value not in ([], {}) else f"`{_yaml(value)}`"
    if info.default is PydanticUndefined:
        return "—"
    return f"`{_yaml(info.default)}`"


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == []:
        return "[]"
    if value == {}:
        return "{}"
    return str(value)


def _meaning(info: FieldInfo) -> str:
    """The description, then the bounds the model enforces."""
    text = " ".join((info.description or "").split())
    bounds = []
    is_text = info.annotation is str
    for m in [*info.metadata, *_nested_metadata(info.annotation)]:
        for kind, attr, sign in (
            (Ge, "ge", "≥"),
            (Gt, "gt", ">"),
            (Le, "le", "≤"),
            (Lt, "lt", "<"),
        ):
            if isinstance(m, kind):
                bounds.append(f"{sign} {_number(getattr(m, attr))}")
        if isinstance(m, MinLen) and m.min_length:
            least = "one item" if m.min_length == 1 else f"{m.min_length} items"
            bounds.append("not empty" if is_text else f"at least {least}")
        if isinstance(m, MaxLen):
            bounds.append(f"at most {m.max_length} item(s)")
        pattern = getattr(m, "pattern", None)
        if pattern:
            bounds.append(f"matches `{pattern}`")
    return text + (f" ({'; '.join(bounds)})" if bounds else "")


def _nested_metadata(annotation: Any) -> list[Any]:
    """Constraints of ``Annotated`` types inside a union (``Seconds | None``)."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in getattr(arg, "__metadata__", ())]
    return []


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 10_000:
        return f"{value:,}"
    return str(value)


_RST_CODE = re.compile(r"``([^`]+)``")
_RST_ROLE = re.compile(r":(?:func|class|mod|meth|attr):`~?([^`]+)`")


def _prose(doc: str | None, until: str | None = None) -> str:
    """A docstring as Markdown: ``code`` to `code`, a ``::`` block to a fenced block;
    ``until``: leave out the part from a line starting with that word (a module's own list
    of parameters, which the tables give)."""
    if not doc:
        return ""
    text = inspect.cleandoc(doc)
    if until:
        text = re.split(rf"^{until}\b.*$", text, maxsplit=1, flags=re.M)[0]
    text = _RST_ROLE.sub(r"`\1`", _RST_CODE.sub(r"`\1`", text))
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            out.append(line.rstrip()[:-1])
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            while block and not block[0].strip():
                block.pop(0)
            out += ["", "```", *block, "```", ""]
            continue
        if line.rstrip().endswith(":") and i + 1 < len(lines) and _indented(lines[i + 1]):
            out += [line, "", "```"]  # an indented table of names, as in the command agent
            i += 1
            while i < len(lines) and _indented(lines[i]):
                out.append(lines[i][2:])
                i += 1
            out += ["```", ""]
            continue
        out.append(line)
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _indented(line: str) -> bool:
    return line.startswith("  ") and not line.lstrip().startswith("- ")


def main() -> None:
    print(render(), end="")


if __name__ == "__main__":  # pragma: no cover
    main()
