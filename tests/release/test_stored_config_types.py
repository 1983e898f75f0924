"""The stored-config TypedDicts name only fields the config models write.

Readers of ``Run.config`` (report, gate, compare) are typed by ``harness.release.run_config``
and a gate result's policy by ``GatePolicyRecord``; a field misspelt there would type-check
against itself and read nothing from a real stored config. These tests tie each name to the
pydantic model whose ``model_dump`` the runner stores.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from harness.config.models import Arm, EnvironmentSpec, ModelSettings, Suite, Task
from harness.config.release import GatePolicy, PrimaryComparison, Repeats, ReportSettings
from harness.release import run_config as rc
from harness.release.records import GatePolicyRecord, PrimaryRecord


def _dumped_fields(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("record", "model", "extra"),
    [
        (rc.StoredSuite, Suite, set()),
        (rc.StoredArm, Arm, set()),
        (rc.StoredModel, ModelSettings, {"model"}),  # older configs' name of the model
        (rc.StoredReportSettings, ReportSettings, set()),
        (rc.StoredRepeats, Repeats, set()),
        (rc.StoredTask, Task, set()),
        (rc.StoredEnvironment, EnvironmentSpec, {"root"}),  # added by the runner
        (PrimaryRecord, PrimaryComparison, set()),
    ],
)
def test_stored_fields_exist_in_the_model(record: type, model: type[BaseModel], extra: set[str]):
    unknown = set(record.__annotations__) - _dumped_fields(model) - extra
    assert not unknown, f"{record.__name__} declares fields {model.__name__} never stores"


def test_gate_policy_record_is_the_whole_policy_dump():
    """The gate's JSON carries the policy's dump whole, so the record declares every field."""
    dumped = set(GatePolicy(rule="improvement").model_dump(mode="json"))
    assert set(GatePolicyRecord.__annotations__) == dumped == _dumped_fields(GatePolicy)


def test_stored_config_keys_are_what_the_runner_stores():
    """``subset``: only in a run on a declared subset (``config["subset"]``)."""
    keys = {"suite", "tasks", "environments", "subset"}
    assert set(rc.StoredConfig.__annotations__) == keys
