"""Lock files: the image ids (and base image digests) a suite's environments resolved to.

`harness lock suite.yaml` writes ``suite.lock.json`` beside the suite; `harness run --locked`
refuses to start when any environment now resolves to something else, naming each one. The
ready-made agents' CLI builds are pinned twice: per arm (``agents``: the CLI version) and,
on a backend that runs them inside its sandboxes, per environment (its entry's ``agents``:
the package spec and, on Docker, the id of the task image plus that CLI, on bwrap the
SHA-256 of the executable it binds).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.config.loader import ResolvedSuite
from harness.errors import EnvironmentBuildError
from harness.sandbox.base import AgentBuild, Environment, SandboxProvider


class LockMismatch(EnvironmentBuildError):
    """An environment no longer matches the lock file."""


def lock_path(resolved: ResolvedSuite) -> Path:
    return resolved.path.with_suffix(".lock.json")


async def current_entries(
    resolved: ResolvedSuite, provider: SandboxProvider | None
) -> dict[str, dict[str, Any]]:
    if provider is None:
        return {}
    environments = list(resolved.environments.values())
    await provider.prepare(environments)
    await provider.prepare_agents(agent_builds(resolved))
    return await provider.lock_entries(environments)


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
    from harness.sandbox.lock_compare import check_lock

    return check_lock(locked, current)


def agent_pins(resolved: ResolvedSuite) -> dict[str, str]:
    """Arm name → the pinned build of a ready-made agent (e.g. ``@openai/codex@0.171.0``)."""
    from harness.agent_process import runs_in_child
    from harness.agents import agent_class

    pins: dict[str, str] = {}
    for arm in resolved.suite.arms:
        if runs_in_child(arm.agent):  # pins nothing, and is never imported here
            continue
        pin = agent_class(arm.agent).pinned(arm)
        if pin is not None:
            pins[arm.name] = pin
    return pins


def agent_builds(resolved: ResolvedSuite) -> list[tuple[Environment, AgentBuild]]:
    """Every (environment, CLI build) the suite's arms need built into an image: each
    ready-made agent arm runs every task, so each of its builds on every environment."""
    from harness.agent_process import runs_in_child
    from harness.agents import agent_class

    builds: dict[str, AgentBuild] = {}
    for arm in resolved.suite.arms:
        if runs_in_child(arm.agent):  # builds nothing into images, and is never imported
            continue
        build = agent_class(arm.agent).build(arm)
        if build is not None:
            builds.setdefault(build.key, build)
    return [(env, b) for env in resolved.environments.values() for b in builds.values()]


def _cli_mismatches(doc: dict[str, Any], resolved: ResolvedSuite) -> list[str]:
    """The ready-made agents' CLI builds against the lock: each environment's package specs
    (when the lock was made with images) and each arm's pin."""
    from harness.sandbox.lock_compare import agent_mismatches

    problems = []
    for env, build in agent_builds(resolved):
        was = (doc["environments"].get(env.name) or {}).get("agents")
        if was is not None:
            now = {build.key: {"npm": build.spec}}
            problems += agent_mismatches(env.name, was, now, fields=("npm",))
    for arm, pin in agent_pins(resolved).items():
        was = (doc.get("agents") or {}).get(arm)
        if was != pin:
            problems.append(f"arm '{arm}': agent {pin}, locked {was or 'nothing'}")
    return problems


async def check_lock_for(resolved: ResolvedSuite, provider: SandboxProvider | None) -> None:
    path = lock_path(resolved)
    if not path.is_file():
        raise LockMismatch(
            f"--locked: no lock file {path}; create it with `harness lock {resolved.path}`"
        )
    doc = json.loads(path.read_text())
    locked = doc["environments"]
    # What the suite alone says first: a changed CLI is refused before it is downloaded.
    problems = _cli_mismatches(doc, resolved)
    if not problems:
        problems = mismatches(locked, await current_entries(resolved, provider))
    if problems:
        raise LockMismatch(f"--locked: {path} does not match: " + "; ".join(problems))
