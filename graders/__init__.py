"""Graders, registered by type name. A task lists graders as ``{type: NAME, ...params}``."""

from __future__ import annotations

import importlib

from pydantic import ValidationError

from graders.base import Combined, Evidence, Grader, GraderParams, Verdict, combine
from harness.config.models import GraderSpec

GRADERS: dict[str, str] = {
    "answer_match": "graders.answer_match:AnswerMatch",
    "required_outputs": "graders.required_outputs:RequiredOutputs",
    "state_diff": "graders.state_diff:StateDiff",
    "trajectory": "graders.trajectory:TrajectoryRules",
    "tests_script": "graders.tests_script:TestsScript",
}


def grader_class(type_name: str) -> type[Grader]:
    target = GRADERS.get(type_name, type_name)
    if ":" not in target:
        raise KeyError(f"unknown grader type '{type_name}' (known: {', '.join(sorted(GRADERS))})")
    module, cls = target.split(":")
    found: type[Grader] = getattr(importlib.import_module(module), cls)
    return found


def build_grader(spec: GraderSpec) -> Grader:
    """Validate a grader spec against its class's parameter model and instantiate it.

    Raises ``KeyError`` for an unknown type and ``pydantic.ValidationError`` for bad params;
    the config loader turns both into one-line errors naming the file and field.
    """
    cls = grader_class(spec.type)
    params = cls.Params.model_validate(spec.model_dump())
    return cls(params)


__all__ = [
    "GRADERS",
    "Combined",
    "Evidence",
    "Grader",
    "GraderParams",
    "ValidationError",
    "Verdict",
    "build_grader",
    "combine",
    "grader_class",
]
