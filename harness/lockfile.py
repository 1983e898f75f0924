"""Lock files: the image ids (and base image digests) a suite's environments resolved to,
and the setups of its judges (each task's judge graders, the suite's pairwise judge).

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
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.config.loader import ResolvedSuite
from harness.errors import EnvironmentBuildError
from harness.sandbox.base import AgentBuild, Environment, SandboxProvider

if TYPE_CHECKING:
    from harness.resolve import Resolved


class LockMismatch(EnvironmentBuildError):
    """An environment no longer matches the lock file."""


def lock_path(resolved: ResolvedSuite) -> Path:
    return resolved.path.with_suffix(".lock.json")


async def current_entries(
    resolved: Resolved, provider: SandboxProvider | None
) -> dict[str, dict[str, Any]]:
    if provider is None:
        return {}
    environments = list(resolved.environments.values())
    await provider.prepare(environments)
    await provider.prepare_agents(agent_builds(resolved))
    return await provider.lock_entries(environments)


def source_files(env: Environment) -> dict[str, str]:
    """Relative path -> sha256 of every file in the environment's folder: what its image,
    tools and setup are made from, so a mismatch can name the file that changed."""
    from harness.sandbox.docker_images import files_manifest

    return {k: v for k, v in files_manifest(env.root).items() if "__pycache__" not in k}


def changed_sources(locked: dict[str, dict], resolved: ResolvedSuite) -> dict[str, str]:
    """Environment -> the files of its folder changed, added or removed since the lock
    recorded them (lock files without that record: nothing)."""
    problems = {}
    for name, env in sorted(resolved.environments.items()):
        was = (locked.get(name) or {}).get("sources")
        if was is None:
            continue
        now = source_files(env)
        changes = [f"{f} changed" for f in sorted(set(was) & set(now)) if was[f] != now[f]]
        changes += [f"{f} added" for f in sorted(set(now) - set(was))]
        changes += [f"{f} removed" for f in sorted(set(was) - set(now))]
        if changes:
            more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
            problems[name] = f"{', '.join(changes[:3])}{more}"
    return problems


async def write_lock(resolved: Resolved, provider: SandboxProvider | None, sandbox: str) -> Path:
    entries = await current_entries(resolved, provider)
    for name, env in resolved.environments.items():
        entries.setdefault(name, {})["sources"] = source_files(env)
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
    judges = judge_pins(resolved)
    if judges:
        doc["judges"] = judges
    if resolved.pairwise is not None:
        doc["pairwise_judge"] = resolved.pairwise.setup_hash()
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path


def mismatches(
    locked: dict[str, dict], current: dict[str, dict], because: dict[str, str] | None = None
) -> list[str]:
    """One line per environment whose pinned image (or base image) changed; ``because``:
    the files that changed, named instead of the image ids they changed."""
    from harness.sandbox.lock_compare import check_lock

    return check_lock(locked, current, because)


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


def judge_pins(resolved: Resolved) -> dict[str, list[str]]:
    """Task id → the setup hash of each of its judge graders (model, prompt, rubric, ...)."""
    pins: dict[str, list[str]] = {}
    for task, graders in resolved.graders.items():
        hashes = [h for g in graders if (h := g.params.judge_setup()) is not None]
        if hashes:
            pins[task] = hashes
    return pins


def agent_builds(resolved: Resolved) -> list[tuple[Environment, AgentBuild]]:
    """Every (environment, program build) the suite's arms need built into an image (a
    ready-made agent's CLI, a command agent's ``program``): each arm runs every task, so
    each of its builds on every environment."""
    from harness.agent_process import runs_in_child

    builds: dict[str, AgentBuild] = {}
    for arm in resolved.suite.arms:
        if runs_in_child(arm.agent):  # builds nothing into images, and is never imported
            continue
        build = resolved.agents[arm.name].build(arm)
        if build is not None:
            builds.setdefault(build.key, build)
    return [(env, b) for env in resolved.environments.values() for b in builds.values()]


def _cli_mismatches(doc: dict[str, Any], resolved: Resolved) -> list[str]:
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
    locked_judges = doc.get("judges") or {}
    for task, hashes in sorted(judge_pins(resolved).items()):
        was = locked_judges.get(task)
        if was != hashes:
            problems.append(
                f"task '{task}': judge setup {'/'.join(hashes)}, locked {'/'.join(was or []) or 'none'}"
            )
    pairwise = resolved.pairwise.setup_hash() if resolved.pairwise is not None else None
    if pairwise != doc.get("pairwise_judge"):
        problems.append(
            f"pairwise judge setup {pairwise or 'none'}, locked {doc.get('pairwise_judge') or 'none'}"
        )
    return problems


async def check_lock_for(resolved: Resolved, provider: SandboxProvider | None) -> None:
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
        current = await current_entries(resolved, provider)
        problems = mismatches(locked, current, changed_sources(locked, resolved))
    if problems:
        raise LockMismatch(
            f"--locked: {path} does not match: {'; '.join(problems)} (if that is intended, "
            f"lock again: harness lock {resolved.path})"
        )
