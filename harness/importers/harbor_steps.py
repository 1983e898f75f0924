"""Harbor's multi-step tasks (``[[steps]]`` and ``steps/NAME/``) as a task's ``steps``
(``harness.trial_multistep``).

Each ``[[steps]]`` table names a step whose directory holds its ``instruction.md``, its
``solution/solve.sh`` (the oracle's) and its ``tests/``, laid over the task's own
``tests/`` (a step's file of the same name wins) as the step's hidden material. Read: the
step's ``min_reward``, its agent timeout (the step's time budget) and its verifier timeout
(the tests' timeout is the largest), and the top-level ``multi_step_reward_strategy``
(``mean``, Harbor's default, or ``final``). The steps share one sandbox, so every step is
graded in it, as Harbor's shared verifier is. Refused, naming the step and setting: a
separate verifier, per-step networks unlike the task's, healthchecks, verifier variables and work dir uploads
(``steps/NAME/workdir``); a step without an instruction or a ``test.sh``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.importers.harbor_network import Phase


class HarborStep(BaseModel):
    """One ``[[steps]]`` table: the keys read; Harbor's others are allowed and unread."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    min_reward: float | None = Field(None, ge=0, le=1)
    agent: dict[str, Any] = Field(default_factory=dict)
    verifier: dict[str, Any] = Field(default_factory=dict)
    healthcheck: object = None


def read_steps(raw: object) -> list[HarborStep]:
    """The ``[[steps]]`` tables; raises ``ValueError`` with a one-line reason."""
    if not isinstance(raw, list) or not raw:
        raise ValueError("a readable [[steps]] list (steps: not a list of tables)")
    try:
        return [HarborStep.model_validate(table) for table in raw]
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        why = f"a readable [[steps]] table (steps.{where}: {err['msg'].lower()})"
        raise ValueError(why) from None


def refusal(
    task_dir: Path, raw: object, separate_verifier: bool, task_phases: tuple[Phase, Phase]
) -> str | None:
    """Why these steps cannot run as the harness's steps, or None. A step's network is
    accepted when it is the task's own for that phase (``task_phases``: agent, verifier)."""
    try:
        steps = read_steps(raw)
    except ValueError as exc:
        return str(exc)
    if separate_verifier:
        return "multi-step tasks with a separate verifier ([verifier] environment_mode)"
    for step in steps:
        where = f"steps.{step.name}"
        sdir = task_dir / "steps" / step.name
        verifier = step.verifier
        if verifier.get("environment_mode") == "separate" or verifier.get("environment"):
            return f"multi-step tasks with a separate verifier ({where}.verifier)"
        for phase, theirs in zip(("agent", "verifier"), task_phases, strict=True):
            table = getattr(step, phase)
            if table.get("network_mode") is None and table.get("allowed_hosts") is None:
                continue
            mode = table.get("network_mode") or theirs.mode
            own = Phase(str(mode), tuple(map(str, table.get("allowed_hosts") or ())), "")
            if not own.same(theirs):
                return f"a per-step network unlike the task's ({where}.{phase}.network_mode)"
        if step.healthcheck:
            return f"per-step healthchecks ({where}.healthcheck)"
        if verifier.get("env"):
            return f"per-step verifier environment variables ({where}.verifier.env)"
        if (sdir / "workdir").is_dir():
            return f"per-step work dir uploads (steps/{step.name}/workdir)"
        if not (sdir / "instruction.md").is_file():
            return f"an instruction.md for each step (steps/{step.name}/instruction.md missing)"
        if not any((d / "test.sh").is_file() for d in (sdir / "tests", task_dir / "tests")):
            return f"a test.sh for each step (steps/{step.name}/tests/test.sh missing)"
    return None


def write_steps(task_dir: Path, raw: object, hidden_root: Path, hidden_rel: str) -> list[dict]:
    """The task's ``steps`` entries; each step's hidden material is written under
    ``hidden_root`` (the task's tests/, then the step's over it), named relative to the
    task file as ``hidden_rel/<step>``."""
    out = []
    for step in read_steps(raw):
        sdir = task_dir / "steps" / step.name
        hidden = hidden_root / step.name
        for tests in (task_dir / "tests", sdir / "tests"):
            if tests.is_dir():
                shutil.copytree(tests, hidden, dirs_exist_ok=True)
        entry: dict[str, Any] = {
            "name": step.name,
            "instruction": (sdir / "instruction.md").read_text(),
            "hidden": f"{hidden_rel}/{step.name}",
        }
        solve = sdir / "solution" / "solve.sh"
        if solve.is_file():
            entry["solution"] = {"commands": [solve.read_text()]}
        if step.agent.get("timeout_sec"):
            entry["timeout_s"] = float(step.agent["timeout_sec"])
        if step.min_reward is not None:
            entry["min_reward"] = step.min_reward
        out.append(entry)
    return out


def verifier_timeout(raw: object, default: float) -> float:
    """The largest of the steps' verifier timeouts (the task's tests' timeout)."""
    found = [
        float(s.verifier["timeout_sec"]) for s in read_steps(raw) if s.verifier.get("timeout_sec")
    ]
    return max(found, default=default)


__all__ = ["HarborStep", "read_steps", "refusal", "verifier_timeout", "write_steps"]
