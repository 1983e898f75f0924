"""Lock files: the image ids (and base image digests) a suite's environments resolved to.

`harness lock suite.yaml` writes ``suite.lock.json`` beside the suite; `harness run --locked`
refuses to start when any environment now resolves to something else, naming each one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.config.loader import ResolvedSuite
from harness.errors import EnvironmentBuildError
from harness.sandbox.base import SandboxProvider


class LockMismatch(EnvironmentBuildError):
    """An environment no longer matches the lock file."""


def lock_path(resolved: ResolvedSuite) -> Path:
    return resolved.path.with_suffix(".lock.json")


async def current_entries(
    resolved: ResolvedSuite, provider: SandboxProvider | None
) -> dict[str, dict[str, Any]]:
    if provider is None:
        return {}
    return await provider.lock_entries(list(resolved.environments.values()))


async def write_lock(
    resolved: ResolvedSuite, provider: SandboxProvider | None, sandbox: str
) -> Path:
    entries = await current_entries(resolved, provider)
    path = lock_path(resolved)
    doc = {
        "suite": resolved.suite.name,
        "sandbox": sandbox,
        "harness_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "environments": entries,
    }
    agents = agent_pins(resolved)
    if agents:
        doc["agents"] = agents
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path


def mismatches(locked: dict[str, dict], current: dict[str, dict]) -> list[str]:
    """One line per environment whose pinned image (or base image) changed."""
    from harness.sandbox.docker_images import check_lock

    return check_lock(locked, current)


def agent_pins(resolved: ResolvedSuite) -> dict[str, str]:
    """Arm name → the pinned build of a ready-made agent (e.g. ``@openai/codex@0.171.0``)."""
    from harness.agents import agent_class

    pins: dict[str, str] = {}
    for arm in resolved.suite.arms:
        pin = agent_class(arm.agent).pinned(arm)
        if pin is not None:
            pins[arm.name] = pin
    return pins


async def check_lock_for(resolved: ResolvedSuite, provider: SandboxProvider | None) -> None:
    path = lock_path(resolved)
    if not path.is_file():
        raise LockMismatch(
            f"--locked: no lock file {path}; create it with `harness lock {resolved.path}`"
        )
    doc = json.loads(path.read_text())
    locked = doc["environments"]
    problems = mismatches(locked, await current_entries(resolved, provider))
    for arm, pin in agent_pins(resolved).items():
        was = (doc.get("agents") or {}).get(arm)
        if was != pin:
            problems.append(f"arm '{arm}': agent {pin}, locked {was or 'nothing'}")
    if problems:
        raise LockMismatch(f"--locked: {path} does not match: " + "; ".join(problems))
