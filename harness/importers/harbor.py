"""``harness import harbor PATH``: Harbor / Terminal-Bench task directories in, harness
environments and one suite out.

A Harbor task is a directory with ``task.toml`` (timeouts, resources, options),
``instruction.md`` (what the agent is told), ``environment/Dockerfile`` (and its build
context), ``solution/solve.sh`` (the reference solution) and ``tests/test.sh``, which writes
a reward to ``/logs/verifier/reward.txt`` (or ``reward.json``). Each becomes:

- ``environments/harbor-<name>/``: the ``environment/`` directory as the image's build
  context, with the workdir from ``task.toml`` (else the Dockerfile's last ``WORKDIR``) and
  the agent's user from ``[agent] user``;
- a task in ``tasks/harbor/tasks.yaml``: the instruction; ``solve.sh`` as the oracle's
  solution; ``tests/`` as hidden material copied in after the agent, run by a
  ``tests_script`` grader from ``/tests`` that reads the reward file (a reward of 1 passes);
  the agent and verifier timeouts as the trial's time budget and the tests' timeout;
- ``tasks/harbor/suite.yaml``: oracle and noop arms on Docker, with the largest memory and
  CPU limits the tasks ask for.

A task that needs what the harness cannot provide is refused with one line naming the
feature (see ``refusal``); the rest still import.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError

REWARD_DIR = "/logs/verifier"
TEST_COMMAND = (
    f'mkdir -p {REWARD_DIR} /tests && cp -R "$HIDDEN_DIR"/. /tests/ && bash /tests/test.sh'
)


@dataclass
class HarborImport:
    imported: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    """task directory (relative) -> the one-line reason."""
    suite: Path | None = None


def find_tasks(root: Path) -> list[Path]:
    """Task directories under ``root`` (``root`` itself when it is one), sorted."""
    if (root / "task.toml").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("task.toml"))


def _nonempty(table: Any) -> bool:
    return isinstance(table, dict) and bool(table)


def refusal(task_dir: Path, toml: dict[str, Any]) -> str | None:
    """Why this task cannot be run by the harness, or None. One feature per line."""
    env = toml.get("environment", {})
    agent = toml.get("agent", {})
    verifier = toml.get("verifier", {})
    edir = task_dir / "environment"
    if (task_dir / "steps").is_dir() or "steps" in toml:
        return "multi-step tasks (steps/)"
    if any((edir / n).is_file() for n in ("docker-compose.yaml", "docker-compose.yml")):
        return "a multi-container environment (environment/docker-compose.yaml)"
    if env.get("gpus", 0):
        return f"GPUs (environment.gpus = {env['gpus']})"
    if str(env.get("os", "linux")).lower() == "windows" or any(task_dir.rglob("*.bat")):
        return "Windows containers (.bat scripts)"
    if env.get("mcp_servers") or "transport" in agent or "url" in agent:
        return "MCP servers"
    if _nonempty(env.get("healthcheck")):
        return "container healthchecks (environment.healthcheck)"
    if _nonempty(verifier.get("environment")) or env.get("environment_mode"):
        return "a separate verifier environment"
    if env.get("skills_dir"):
        return "agent skills (environment.skills_dir)"
    if env.get("docker_image") and not (edir / "Dockerfile").is_file():
        return f"a prebuilt remote image ({env['docker_image']}) instead of environment/Dockerfile"
    if not (edir / "Dockerfile").is_file():
        return "a cloud or computer-use environment (there is no environment/Dockerfile)"
    mode = env.get("network_mode", "no-network")
    if mode == "public":
        return "unrestricted network access (network_mode = public)"
    if mode not in ("no-network", "allowlist"):
        return f"network_mode = {mode}"
    if any("*" in str(h) for h in env.get("allowed_hosts", [])):
        return "wildcard host allowlists (allowed_hosts with '*')"
    if _nonempty(env.get("env")):
        return "environment variables ([environment.env])"
    if _nonempty(verifier.get("env")):
        return "verifier environment variables, e.g. an API key for a model judge ([verifier.env])"
    if _nonempty(toml.get("solution", {}).get("env")):
        return "solution environment variables ([solution.env])"
    if not (task_dir / "instruction.md").is_file():
        return "an instruction.md (missing)"
    if not (task_dir / "tests" / "test.sh").is_file():
        return "a tests/test.sh verifier (missing)"
    if "/logs/agent" in (task_dir / "tests" / "test.sh").read_text(errors="replace"):
        return "tests that read Harbor's own agent logs (/logs/agent)"
    return None


def _workdir(task_dir: Path, env: dict[str, Any]) -> str:
    if env.get("workdir"):
        return str(env["workdir"])
    text = (task_dir / "environment" / "Dockerfile").read_text(errors="replace")
    found = re.findall(r"(?im)^\s*WORKDIR\s+(\S+)", text)
    return found[-1] if found else "/"


def _slug(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", rel).strip("-").lower()


def _memory_mb(env: dict[str, Any]) -> int | None:
    if "memory_mb" in env:
        return int(env["memory_mb"])
    m = re.fullmatch(r"(\d+)\s*([gGmM])?i?[bB]?", str(env.get("memory", "")).strip())
    if m:
        return int(m.group(1)) * (1024 if (m.group(2) or "m").lower() == "g" else 1)
    return None


def import_harbor(path: Path, out: Path) -> HarborImport:
    """Long because it writes one import's files in sequence (tasks, environment, suite), each step a few lines.

    Import every task directory under ``path``; see the module doc."""
    if not path.is_dir():
        raise ConfigError(str(path), "", "not a directory")
    dirs = find_tasks(path)
    if not dirs:
        raise ConfigError(str(path), "", "no task.toml found under it")
    result = HarborImport()
    task_root = out / "tasks" / "harbor"
    if task_root.exists():
        shutil.rmtree(task_root)
    (task_root / "hidden").mkdir(parents=True)
    entries, memory, cpus = [], 0, 0.0
    for task_dir in dirs:
        rel = str(task_dir.relative_to(path)) if task_dir != path else task_dir.name
        try:
            toml = tomllib.loads((task_dir / "task.toml").read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            result.refused[rel] = f"unreadable task.toml ({exc})"
            continue
        why = refusal(task_dir, toml)
        if why is not None:
            result.refused[rel] = why
            continue
        slug = _slug(rel)
        env_toml, agent, verifier = (toml.get(k, {}) for k in ("environment", "agent", "verifier"))
        env_dir = out / "environments" / f"harbor-{slug}"
        if env_dir.exists():
            shutil.rmtree(env_dir)
        shutil.copytree(task_dir / "environment", env_dir)
        spec: dict[str, Any] = {
            "name": f"harbor-{slug}",
            "description": f"Harbor task {toml.get('task', {}).get('name', rel)}",
            "version": str(toml.get("task", {}).get("version", "1")),
            "image": {"dockerfile": "Dockerfile"},
            "workdir": _workdir(task_dir, env_toml),
        }
        if agent.get("user"):
            spec["user"] = str(agent["user"])
        (env_dir / "environment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        shutil.copytree(task_dir / "tests", task_root / "hidden" / slug)
        entry: dict[str, Any] = {
            "id": f"harbor/{slug}",
            "instruction": (task_dir / "instruction.md").read_text(),
            "environment": f"harbor-{slug}",
            "class": str(toml.get("metadata", {}).get("category", "harbor")),
            "hidden": f"hidden/{slug}",
            "graders": [
                {
                    "type": "tests_script",
                    "command": TEST_COMMAND,
                    "reward_file": f"{REWARD_DIR}/reward.txt",
                    "timeout_s": float(verifier.get("timeout_sec", 300.0)),
                }
            ],
        }
        solve = task_dir / "solution" / "solve.sh"
        if solve.is_file():
            entry["solution"] = {"commands": [solve.read_text()]}
        if env_toml.get("network_mode") == "allowlist":
            entry["network"] = [str(h) for h in env_toml.get("allowed_hosts", [])]
        if agent.get("timeout_sec"):
            entry["budgets"] = {"timeout_s": float(agent["timeout_sec"])}
        entries.append(entry)
        result.imported.append(rel)
        memory = max(memory, _memory_mb(env_toml) or 0)
        cpus = max(cpus, float(env_toml.get("cpus", 0) or 0))
    if entries:
        (task_root / "tasks.yaml").write_text(
            "# Written by `harness import harbor`.\n"
            + yaml.safe_dump({"tasks": entries}, sort_keys=False, allow_unicode=True)
        )
        suite = {
            "name": "harbor",
            "description": f"Harbor tasks imported from {path}",
            "tasks": ["tasks.yaml"],
            "environments_dir": "../../environments",
            "sandbox": "docker",
            "trials": 1,
            "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
            "limits": {"memory": f"{memory or 1024}m", "cpus": cpus or 1.0},
        }
        result.suite = task_root / "suite.yaml"
        result.suite.write_text(yaml.safe_dump(suite, sort_keys=False))
    return result
