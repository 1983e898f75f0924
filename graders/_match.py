"""Matching recorded actions (tool calls, shell commands) against rules written in YAML
(``ActionRule``)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graders._paths import same
from harness.trajectory import Event

ACTION_KINDS = ("tool_call", "command")


class ActionRule(BaseModel):
    """An action: a tool and, optionally, matchers for some of its arguments. Arguments the
    rule does not name are not checked. An argument matcher is one of:

    - a plain value: equal to the argument (numbers compare by value, ``54 == 54.0``);
    - ``{regex: PATTERN}``: ``re.search`` over the argument rendered as text (anchor with
      ``^...$`` for a full match);
    - ``{one_of: [v1, v2, ...]}``: equal to one of the values;
    - ``{absent: true}``: the argument was not given.

    Shell commands an agent runs are actions of tool ``bash`` with the single argument
    ``command``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    label: str | None = Field(None, description="name used in order pairs and evidence")
    tool: str
    """the tool the action calls (shell commands are tool 'bash' with argument 'command')"""
    args: dict[str, Any] = Field(default_factory=dict, description="argument -> matcher")

    @property
    def key(self) -> str:
        return self.label or self.tool

    def describe(self) -> str:
        if not self.args:
            return self.tool
        shown = ", ".join(f"{k}={_show(v)}" for k, v in self.args.items())
        return f"{self.tool}({shown})"

    def matches(self, tool: str | None, args: dict[str, Any] | None) -> bool:
        if tool != self.tool:
            return False
        args = args or {}
        return all(match_value(m, args.get(name, _MISSING)) for name, m in self.args.items())

    def matches_event(self, event: Event) -> bool:
        return event.kind in ACTION_KINDS and self.matches(event.tool, event.args)


_MISSING = object()


def _show(matcher: Any) -> str:
    if isinstance(matcher, dict) and len(matcher) == 1:
        ((k, v),) = matcher.items()
        return f"<{k} {v!r}>"
    return repr(matcher)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def match_value(matcher: Any, value: Any) -> bool:
    if isinstance(matcher, dict) and len(matcher) == 1:
        ((op, operand),) = matcher.items()
        if op == "regex":
            return value is not _MISSING and re.search(str(operand), _text(value)) is not None
        if op == "one_of":
            return value is not _MISSING and any(same(v, value) for v in operand)
        if op == "absent":
            return (value is _MISSING) == bool(operand)
    if value is _MISSING:
        return False
    return same(matcher, value)
