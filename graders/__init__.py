"""Graders, registered by type name. A task lists graders as ``{type: NAME, ...params}``."""

from __future__ import annotations

from pydantic import ValidationError

from graders.base import Combined, Evidence, Grader, GraderParams, Verdict, combine
from harness.config.models import GraderSpec
from harness.registry import Registry

# Graders follow the ``Grader`` protocol (no common base class), so entries are not checked
# against one; each declares ``Params``, which ``build_grader`` validates.
GRADERS: Registry[Grader] = Registry(
    "grader type",
    None,
    {
        "answer_match": "graders.answer_match:AnswerMatch",
        "required_outputs": "graders.required_outputs:RequiredOutputs",
        "state_diff": "graders.state_diff:StateDiff",
        "trajectory": "graders.trajectory:TrajectoryRules",
        "tests_script": "graders.tests_script:TestsScript",
        "judge": "graders.judge:Judge",
    },
)


def grader_class(type_name: str) -> type[Grader]:
    """The grader class registered as ``type_name`` (or given as 'module:Class')."""
    return GRADERS.load(type_name)


def build_grader(spec: GraderSpec) -> Grader:
    """Validate a grader spec against its class's parameter model and instantiate it.

    Raises ``RegistryError`` for an unknown type and ``pydantic.ValidationError`` for bad
    params; the resolve step turns both into one-line errors naming the file and field.
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
