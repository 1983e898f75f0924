"""State comparison: the final state must equal ``s0 ⊕ Δ*`` everywhere but ignored paths.

The state is the JSON document the environment's state dump prints: ``{table: {key:
{field: value}}}`` for a database, ``{"files": {path: {type, sha256, mode}}}`` for a file
system. The task declares the goal as a patch Δ* (agent-evaluation guide, "Grading the outcome"):

- a nested mapping from keys to new values: ``{orders: {W1: {status: cancelled}}}``;
- a mapping merges into what is there, so a record that did not exist is *created*;
- ``null`` deletes: ``{orders: {W2: null}}`` means "W2 no longer exists";
- for file-system state, a ``content`` key inside ``files.<path>`` is sugar for that text's
  ``sha256`` (``{files: {etc/app.conf: {content: "port=8080\\n"}}}``).

The trial passes iff ``final == apply(initial, Δ*)`` on every path that no ``ignore``
pattern covers (the grader's own plus the environment's ``state.ignore``), with exact values:
comparing the whole state catches side effects, comparing values catches wrong values.
``null`` and an absent key count as the same value.

Every difference is classified with its path and both values:

- *missing change*: the patch sets the path but it still holds its initial value;
- *wrong value*: the patch sets the path and it changed, but not to the expected value;
- *unexpected change*: the patch does not touch the path and it changed (a side effect).

``strict_types: true`` compares as tau-bench's reward does (it hashes ``str()`` of every
value): ``250.0`` differs from ``250``, ``true`` from ``1``, and a key holding ``null`` from
an absent key. ``null`` in the patch still deletes.

``goal_only: true`` compares only the paths the patch names. It misses side effects and
exists to demonstrate that (the agent-evaluation guide's middle grader); do not use it for real tasks.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from graders._paths import (
    ABSENT,
    Path,
    apply_patch,
    dotted,
    is_ignored,
    jsonable,
    patch_paths,
    same,
    short,
    strict_same,
)
from graders.base import Evidence, GraderParams, Verdict
from harness.errors import GraderError

MAX_REASONS = 20


class StateDiffParams(GraderParams):
    type: Literal["state_diff"] = "state_diff"
    expected_patch: dict[str, Any] = Field(
        default_factory=dict,
        description="Δ*: nested mapping path -> new value; null deletes; new keys create",
    )
    expect_no_change: bool = Field(
        False, description="sugar for an empty patch: the final state must equal the initial"
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="dotted paths with '*' / '**' wildcards, added to the environment's",
    )
    goal_only: bool = Field(
        False, description="compare only the patched paths (misses side effects; demo only)"
    )
    strict_types: bool = Field(
        False,
        description="int != float (250 != 250.0), bool != number, null != absent: "
        "tau-bench's equality",
    )

    @model_validator(mode="after")
    def _explicit(self) -> StateDiffParams:
        if self.expect_no_change and self.expected_patch:
            raise ValueError("give either expected_patch or expect_no_change: true, not both")
        if not self.expect_no_change and not self.expected_patch:
            raise ValueError(
                "expected_patch is empty: write expect_no_change: true if no change is the goal"
            )
        if self.expect_no_change and self.goal_only:
            raise ValueError("goal_only has no goal to compare when expect_no_change is true")
        return self


def _file_sugar(patch: dict[str, Any]) -> dict[str, Any]:
    """Replace ``files.<path>.content`` (text) with its sha256 (and type 'file' if unset)."""
    files = patch.get("files")
    if not isinstance(files, dict):
        return patch
    out = dict(files)
    for path, entry in files.items():
        if isinstance(entry, dict) and "content" in entry:
            entry = dict(entry)
            text = entry.pop("content")
            data = text.encode() if isinstance(text, str) else bytes(text)
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            entry.setdefault("type", "file")
            out[path] = entry
    return {**patch, "files": out}


def _covered(patch: Any, path: Path) -> bool:
    """Does the patch set ``path``, something above it, or something below it?"""
    node = patch
    for key in path:
        if not isinstance(node, dict):
            return True
        if key not in node:
            return False
        node = node[key]
    return True


def _equal(a: Any, b: Any) -> bool:
    if a in (None, ABSENT) and b in (None, ABSENT):
        return True
    return same(a, b)


def _identical(a: object, b: object) -> bool:
    """A fast, conservative check that two subtrees are the same values of the same types
    (equal pickles): lets the walk skip the untouched bulk of a large state. False only
    costs a walk."""
    return a == b and pickle.dumps(a) == pickle.dumps(b)


class StateDiff:
    """Outcome grader: exact comparison of the final state with ``s0 ⊕ Δ*``."""

    type_name: ClassVar[str] = "state_diff"
    version: ClassVar[str] = "1"
    Params: ClassVar[type[StateDiffParams]] = StateDiffParams

    def __init__(self, params: StateDiffParams):
        self.params = params
        self.patch = _file_sugar(params.expected_patch)

    @property
    def label(self) -> str:
        return self.params.name or self.type_name

    async def grade(self, evidence: Evidence) -> Verdict:
        s0, s1 = evidence.initial_state, evidence.final_state
        if s0 is None or s1 is None:
            which = "initial" if s0 is None else "final"
            raise GraderError(
                f"state_diff needs the environment's state, but the {which} state is missing "
                "(does the environment declare a state dump?)"
            )
        ignore = [*self.params.ignore, *evidence.state_ignore]
        expected = apply_patch(s0, self.patch)
        found: dict[str, list[dict[str, Any]]] = {
            "missing_changes": [],
            "wrong_values": [],
            "side_effects": [],
        }
        self._walk(expected, s1, s0, (), ignore, found)

        reasons: list[str] = []
        for item in found["missing_changes"]:
            reasons.append(
                f"missing change at {item['path']}: expected {short(item['expected'])}, "
                f"still {short(item['actual'])}"
            )
        for item in found["wrong_values"]:
            reasons.append(
                f"wrong value at {item['path']}: expected {short(item['expected'])}, "
                f"got {short(item['actual'])} (was {short(item['before'])})"
            )
        for item in found["side_effects"]:
            reasons.append(
                f"unexpected change at {item['path']}: {short(item['before'])} -> "
                f"{short(item['after'])}"
            )
        if len(reasons) > MAX_REASONS:
            extra = len(reasons) - MAX_REASONS
            reasons = [*reasons[:MAX_REASONS], f"... and {extra} more differences"]
        passed = not reasons
        mode = (
            "no_change"
            if self.params.expect_no_change
            else "goal_only"
            if self.params.goal_only
            else "full"
        )
        details: dict[str, Any] = {
            "mode": mode,
            "patched_paths": [dotted(p) for p in patch_paths(self.patch) if p],
            "ignore": ignore,
            **{k: [_json_item(i) for i in v] for k, v in found.items()},
        }
        return Verdict(
            grader=self.label,
            passed=passed,
            score=float(passed),
            reasons=reasons,
            details=details,
            role="outcome",
            version=self.version,
        )

    def _walk(
        self,
        expected: Any,
        actual: Any,
        initial: Any,
        path: Path,
        ignore: list[str],
        found: dict[str, list[dict[str, Any]]],
    ) -> None:
        if path and is_ignored(path, ignore):
            return
        covered = _covered(self.patch, path)
        if self.params.goal_only and not covered:
            return
        if isinstance(expected, dict) and isinstance(actual, dict):
            if _identical(expected, actual):
                return
            keys = sorted(set(expected) | set(actual), key=str)
            for key in keys:
                sub_initial = initial.get(key, ABSENT) if isinstance(initial, dict) else ABSENT
                self._walk(
                    expected.get(key, ABSENT),
                    actual.get(key, ABSENT),
                    sub_initial,
                    (*path, key),
                    ignore,
                    found,
                )
            return
        if (strict_same if self.params.strict_types else _equal)(expected, actual):
            return
        where = dotted(path) or "<root>"
        if not covered:
            found["side_effects"].append({"path": where, "before": initial, "after": actual})
        elif (strict_same if self.params.strict_types else _equal)(actual, initial):
            found["missing_changes"].append({"path": where, "expected": expected, "actual": actual})
        else:
            found["wrong_values"].append(
                {"path": where, "expected": expected, "actual": actual, "before": initial}
            )


def _json_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: jsonable(v) if k != "path" else v for k, v in item.items()}
