"""Harbor's separate verifier (``environment_mode = "separate"``, a ``[verifier.environment]``
table), for the whole task or for one step, as a grading sandbox of its own.

Its image is built from the ``tests/`` directory that holds its ``Dockerfile`` (a step's own
``steps/NAME/tests/``, else the task's); its work dir is the one its environment table
names, else the agent's; what it gets of the agent's sandbox is the task's ``artifacts``,
the step's, and ``/logs/artifacts``, each at its path (``grading.files``). A multi-step
task's step is graded by a separate verifier when it says so or inherits it from the task;
a step that says ``environment_mode = "shared"`` (or inherits a shared verifier) is graded
in the agent's sandbox (``grade_in_place``), where Harbor's shared verifier runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.importers import harbor_dockerfile

IN_PLACE = "a multi-step task's shared verifier: the step is graded in the sandbox the next step goes on in"
"""The ``grade_in_place`` reason of a step graded by Harbor's shared verifier."""


@dataclass(frozen=True)
class Verifier:
    """Where one separate verifier's image comes from and what it is given."""

    tests: Path
    """the ``tests/`` directory with its ``Dockerfile`` (the image's build context)"""
    workdir: str
    artifacts: tuple[str, ...]
    """paths copied from the agent's sandbox, ``/logs/artifacts`` included"""


def step_is_separate(verifier: dict, task_separate: bool) -> bool:
    """Is a step (its ``[steps.verifier]`` table) graded by a verifier of its own?"""
    mode = verifier.get("environment_mode")
    if mode in ("shared", "separate"):
        return mode == "separate"
    table = verifier.get("environment")
    return (isinstance(table, dict) and bool(table)) or task_separate


def tests_dir(task_dir: Path, step: str | None) -> Path | None:
    """The ``tests/`` directory whose ``Dockerfile`` builds the verifier (a step's own
    first), or None when there is none."""
    dirs = [task_dir / "steps" / step / "tests"] if step else []
    return next((d for d in [*dirs, task_dir / "tests"] if (d / "Dockerfile").is_file()), None)


def workdir(table: object, default: str) -> str:
    """The verifier's work dir: its environment table's ``workdir``, else ``default``."""
    given = table.get("workdir") if isinstance(table, dict) else None
    return str(given) if given else default


def write_environment(verifier: Verifier, name: str, version: str, out: Path) -> dict:
    """Write the verifier's environment (``out/environments/NAME``, named
    ``harbor-TASK[-STEP]-verifier``) and return the ``grading`` keys naming it and the
    files it gets."""
    env_dir = out / "environments" / name
    if env_dir.exists():
        shutil.rmtree(env_dir)
    shutil.copytree(verifier.tests, env_dir)
    harbor_dockerfile.rewrite(env_dir, env_dir / "Dockerfile")  # checked at import
    spec = {
        "name": name,
        "description": f"Harbor's separate verifier ({name.removeprefix('harbor-')})",
        "version": version,
        "image": {"dockerfile": "Dockerfile"},
        "workdir": verifier.workdir,
    }
    (env_dir / "environment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return {"environment": name, "files": list(dict.fromkeys(verifier.artifacts))}


__all__ = ["IN_PLACE", "Verifier", "step_is_separate", "tests_dir", "workdir", "write_environment"]
