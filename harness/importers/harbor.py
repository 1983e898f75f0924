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
  the agent and verifier timeouts as the trial's time budget and the tests' timeout; a
  model-judge verifier (``[verifier.env]`` with an API key, a ``test.sh`` running one judge
  script) becomes the harness's ``judge`` grader instead (``harbor_judge``);
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
from typing import Literal, NotRequired, TypedDict

import yaml
from pydantic import ValidationError

from harness.errors import ConfigError
from harness.importers import (
    harbor_compose,
    harbor_dockerfile,
    harbor_health,
    harbor_image,
    harbor_judge,
    harbor_network,
    harbor_steps,
    harbor_verifier,
)
from harness.importers.harbor_network import ALLOWLIST, PUBLIC
from harness.importers.harbor_toml import (
    HarborEnvironment,
    HarborToml,
    nonempty,
)

REWARD_DIR = "/logs/verifier"
TEST_COMMAND = (
    f"rm -rf {REWARD_DIR} /tests && mkdir -p -m 700 {REWARD_DIR} /tests && "
    'cp -R "$HIDDEN_DIR"/. /tests/ && { [ ! -f /tests/.harbor-env ] || . /tests/.harbor-env; } '
    "&& bash /tests/test.sh"
)
"""Run by the grader (root) in the grading sandbox: the tests and the reward directory are
its own (mode 700), so code under test run as the agent's user can neither read the tests
nor plant or rewrite the reward."""


class _Image(TypedDict, total=False):
    dockerfile: str
    ref: str
    """Harbor's prebuilt ``docker_image``: pulled when missing, pinned by id in the lock."""


class _EnvironmentEntry(TypedDict):
    """The written ``environment.yaml`` (checked as an ``EnvironmentSpec`` when loaded)."""

    name: str
    description: str
    version: str
    image: _Image
    workdir: str
    user: NotRequired[str]
    setup: NotRequired[list[str]]
    services: NotRequired[dict[str, object]]
    volumes: NotRequired[dict[str, str]]


class _TestsGrader(TypedDict):
    type: Literal["tests_script"]
    command: str
    reward_file: str
    timeout_s: float


class _Solution(TypedDict):
    commands: list[str]


class _Budgets(TypedDict):
    timeout_s: float


_TaskEntry = TypedDict(
    "_TaskEntry",
    {
        "id": str,
        "instruction": str,
        "environment": str,
        "class": str,
        "hidden": NotRequired[str],
        "graders": list[_TestsGrader | dict],
        "solution": NotRequired[_Solution],
        "network": NotRequired[list[str]],
        "internet": NotRequired[bool],
        "grading": NotRequired[dict[str, object]],
        "budgets": NotRequired[_Budgets],
        "grade_in_place": NotRequired[str],
        "steps": NotRequired[list[dict]],
        "step_reward": NotRequired[str],
    },
)
"""One written task (checked as a ``Task`` when loaded); functional form: ``class`` is a
Python keyword."""


@dataclass
class HarborImport:
    imported: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    """task directory (relative) -> the one-line reason."""
    open_egress: list[str] = field(default_factory=list)
    """Imported tasks whose agent or verifier has Harbor's public network: they run only
    where the user allows open egress (``--allow-internet``)."""
    judged: dict[str, str] = field(default_factory=dict)
    """Imported tasks graded by a model judge -> the variable its API key is read from."""
    suite: Path | None = None


def find_tasks(root: Path) -> list[Path]:
    """Task directories under ``root`` (``root`` itself when it is one), sorted."""
    if (root / "task.toml").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("task.toml"))


def refusal(task_dir: Path, toml: HarborToml) -> str | None:
    """Why this task cannot be run by the harness, or None. One feature per line."""
    env, agent, verifier = toml.environment, toml.agent, toml.verifier
    edir = task_dir / "environment"
    multi = toml.steps is not None
    if (task_dir / "steps").is_dir() and not multi:
        return "a [[steps]] list for its steps/ directory"
    try:
        harbor_compose.services(edir)
    except harbor_compose.Refused as exc:
        return str(exc)
    if env.gpus:
        return f"GPUs (environment.gpus = {env.gpus})"
    if str(env.os).lower() == "windows" or any(task_dir.rglob("*.bat")):
        return "Windows containers (.bat scripts)"
    if env.mcp_servers or agent.transport is not None or agent.url is not None:
        return "MCP servers"
    if why := harbor_health.refusal(env.healthcheck, bool(env.docker_image)):
        return why
    if env.environment_mode:
        return "a separate verifier environment ([environment] environment_mode)"
    if toml.separate_verifier:  # a multi-step task's steps each name their Dockerfile
        if not multi and not (task_dir / "tests" / "Dockerfile").is_file():
            return "a separate verifier environment without tests/Dockerfile"
        try:
            _service_files(task_dir, toml)
        except harbor_compose.Refused as exc:
            return str(exc)
    if env.skills_dir:
        return "agent skills (environment.skills_dir)"
    if not env.docker_image and not (edir / "Dockerfile").is_file():
        return "a cloud or computer-use environment (there is no environment/Dockerfile)"
    try:  # what is built must build on the classic builder
        for context, dockerfile in _dockerfiles(task_dir, bool(env.docker_image)):
            harbor_dockerfile.check(context, dockerfile)
    except harbor_dockerfile.Refused as exc:
        return str(exc)
    agent_net, verifier_net = harbor_network.phases(toml.environment, toml.agent, toml.verifier)
    for phase in (agent_net, verifier_net):
        if (why := harbor_network.refusal(phase)) is not None:
            return why
    if multi:  # each step's networks are checked where the step is graded
        nets = harbor_steps.networks(toml)
        if why := harbor_steps.refusal(task_dir, toml.steps, toml.separate_verifier, nets):
            return why
    if why := harbor_image.env_refusal(env.env, bool(env.docker_image)):
        return why
    if _from_host(verifier.env) and multi:
        return (
            "verifier environment variables from the host in a multi-step task ([verifier.env] "
            "${VAR}): they would be read in a sandbox, where no key may go"
        )
    if _from_host(verifier.env) and (task_dir / "tests" / "test.sh").is_file():
        try:  # a model judge's key and model: the harness's judge grader
            _judge(task_dir, toml)
        except harbor_judge.Refused as exc:
            return str(exc)
    elif why := harbor_image.env_refusal(verifier.env, False, "verifier.env"):
        return why  # literal ones: a file the tests' command reads
    if nonempty(toml.solution.env):
        return "solution environment variables ([solution.env])"
    if multi:
        return None
    if not (task_dir / "instruction.md").is_file():
        return "an instruction.md (missing)"
    if not (task_dir / "tests" / "test.sh").is_file():
        return "a tests/test.sh verifier (missing)"
    if "/logs/agent" in (task_dir / "tests" / "test.sh").read_text(errors="replace"):
        return "tests that read Harbor's own agent logs (/logs/agent)"
    return None


def _dockerfiles(task_dir: Path, prebuilt: bool) -> list[tuple[Path, Path]]:
    """(build context, Dockerfile) of every image the import has built from the task: the
    agent's (unless prebuilt), each sidecar's and each verifier's ``tests/Dockerfile``."""
    edir = task_dir / "environment"
    out = [] if prebuilt else [(edir, edir / "Dockerfile")]
    for sidecar in harbor_compose.services(edir)[0].values():
        if "context" in sidecar:
            context = edir / sidecar["context"]
            out.append((context, context / sidecar["image"]["dockerfile"]))
    tests = [task_dir / "tests", *sorted((task_dir / "steps").glob("*/tests"))]
    return [*out, *((d, d / "Dockerfile") for d in tests if (d / "Dockerfile").is_file())]


def _service_files(task_dir: Path, toml: HarborToml) -> dict[str, dict]:
    """A separate verifier's files from sidecars (``grading.services``): their artifacts
    and its ``[[verifier.collect]]`` hooks; raises ``harbor_compose.Refused``."""
    collect = (toml.verifier.model_extra or {}).get("collect")
    wanted = any(not isinstance(a, str) for a in toml.artifacts) or bool(collect)
    if wanted and toml.steps is not None:
        raise harbor_compose.Refused(
            "artifacts from service containers in a multi-step task (artifacts with a service, "
            "[[verifier.collect]])"
        )
    sidecars = harbor_compose.services(task_dir / "environment")[0]
    return harbor_compose.service_artifacts(toml.artifacts, collect, sidecars) if wanted else {}


def _from_host(env: object) -> bool:
    """Does a ``[verifier.env]`` table read a variable of the host (``${VAR}``)?"""
    return isinstance(env, dict) and any("${" in str(v) for v in env.values())


def _judge(task_dir: Path, toml: HarborToml) -> dict | None:
    """The judge grader a model-judge verifier maps to (``harbor_judge``), or None when the
    verifier reads no variable of the host (literal ones are its tests' own); raises
    ``harbor_judge.Refused``."""
    env = toml.verifier.env
    return (
        harbor_judge.judge_grader(task_dir, env)
        if isinstance(env, dict) and _from_host(env)
        else None
    )


def _workdir(task_dir: Path, env: HarborEnvironment) -> str:
    if env.workdir:
        return env.workdir
    dockerfile = task_dir / "environment" / "Dockerfile"
    text = dockerfile.read_text(errors="replace") if dockerfile.is_file() else ""
    found = re.findall(r"(?im)^\s*WORKDIR\s+(\S+)", text)
    return found[-1] if found else "/"


def _slug(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", rel).strip("-").lower()


def _memory_mb(env: HarborEnvironment) -> int | None:
    if env.memory_mb is not None:
        return env.memory_mb
    m = re.fullmatch(r"(\d+)\s*([gGmM])?i?[bB]?", str(env.memory).strip())
    if m:
        return int(m.group(1)) * (1024 if (m.group(2) or "m").lower() == "g" else 1)
    return None


def _verifier_workdir(task_dir: Path, toml: HarborToml) -> str:
    """A separate verifier's work dir: its table's, else the agent's (what lies under the
    agent's work dir lands under the grading sandbox's, so the artifacts keep their paths)."""
    return harbor_verifier.workdir(toml.verifier.environment, _workdir(task_dir, toml.environment))


def _verifier_environment(task_dir: Path, toml: HarborToml, slug: str, out: Path) -> dict:
    """Harbor's separate verifier as the task's grading environment (``harbor_verifier``):
    ``tests/`` as its image's build context, the task's ``artifacts`` and
    ``/logs/artifacts`` copied in where they were. Returns the task's ``grading`` keys."""
    verifier = harbor_verifier.Verifier(
        task_dir / "tests",
        _verifier_workdir(task_dir, toml),
        (*(a for a in toml.artifacts if isinstance(a, str)), "/logs/artifacts"),
    )
    return harbor_verifier.write_environment(
        verifier, f"harbor-{slug}-verifier", str(toml.task.version), out
    )


# long: it writes one import's files in sequence (tasks, environment, suite), each step a few lines.
def import_harbor(path: Path, out: Path) -> HarborImport:
    """Import every task directory under ``path``; see the module doc."""
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
            toml = HarborToml.model_validate(tomllib.loads((task_dir / "task.toml").read_text()))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            result.refused[rel] = f"unreadable task.toml ({exc})"
            continue
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            result.refused[rel] = f"a readable task.toml ({where}: {err['msg'].lower()})"
            continue
        why = refusal(task_dir, toml)
        if why is not None:
            result.refused[rel] = why
            continue
        slug = _slug(rel)
        env_toml, agent, verifier = toml.environment, toml.agent, toml.verifier
        env_dir = out / "environments" / f"harbor-{slug}"
        if env_dir.exists():
            shutil.rmtree(env_dir)
        if (task_dir / "environment").is_dir():
            shutil.copytree(task_dir / "environment", env_dir)
        else:
            env_dir.mkdir(parents=True)
        if not env_toml.docker_image:  # the image the harness builds: with Harbor's /logs
            harbor_image.add_log_dirs(env_dir)
            if isinstance(env_toml.env, dict) and env_toml.env:
                harbor_image.add_env(env_dir, env_toml.env)
        spec: _EnvironmentEntry = {
            "name": f"harbor-{slug}",
            "description": f"Harbor task {rel if toml.task.name is None else toml.task.name}",
            "version": str(toml.task.version),
            # A prebuilt image is what Harbor runs (its Dockerfile, if any, made it).
            "image": (
                {"ref": str(env_toml.docker_image)}
                if env_toml.docker_image
                else {"dockerfile": "Dockerfile"}
            ),
            "workdir": _workdir(task_dir, env_toml),
        }
        if agent.user:
            spec["user"] = str(agent.user)
        dockerfile = env_dir / "Dockerfile"
        text = None if env_toml.docker_image or not dockerfile.is_file() else dockerfile.read_text()
        if setup := harbor_health.setup(text, env_toml.healthcheck):  # its own start
            spec["setup"] = setup
        services, volumes = harbor_compose.services(task_dir / "environment")
        if services or volumes:
            spec["services"], spec["volumes"] = services, volumes
        for context, built in _dockerfiles(task_dir, bool(env_toml.docker_image)):
            if context.is_relative_to(task_dir / "environment"):  # verifiers: their own
                mine = env_dir / context.relative_to(task_dir / "environment")
                harbor_dockerfile.rewrite(mine, mine / built.relative_to(context))
        (env_dir / "environment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        steps: list[dict] = []
        judge = _judge(task_dir, toml)
        if toml.steps is not None:  # each step's hidden material, the first the task's
            hidden_dir = task_root / "hidden" / slug
            how = harbor_steps.step_grading(
                task_dir, toml, slug, out, _verifier_workdir(task_dir, toml)
            )
            steps = harbor_steps.write_steps(
                task_dir, toml.steps, hidden_dir, f"hidden/{slug}", how
            )
        elif judge is None:  # a judge reads the agent's files: nothing of tests/ is run
            shutil.copytree(task_dir / "tests", task_root / "hidden" / slug)
            if isinstance(verifier.env, dict) and verifier.env:  # literal (checked): read
                harbor_image.write_env_file(task_root / "hidden" / slug, verifier.env)
        tests: _TestsGrader = {
            "type": "tests_script",
            "command": TEST_COMMAND,
            "reward_file": f"{REWARD_DIR}/reward.txt",
            "timeout_s": harbor_steps.verifier_timeout(toml.steps, verifier.timeout_sec)
            if steps
            else verifier.timeout_sec,
        }
        entry: _TaskEntry = {
            "id": f"harbor/{slug}",
            "instruction": (
                steps[0]["instruction"] if steps else (task_dir / "instruction.md").read_text()
            ),
            "environment": f"harbor-{slug}",
            "class": str(toml.metadata.category),
            "graders": [judge if judge is not None else tests],
        }
        if judge is None:
            entry["hidden"] = steps[0]["hidden"] if steps else f"hidden/{slug}"
        if steps:
            entry["steps"] = steps
            strategy = (toml.model_extra or {}).get("multi_step_reward_strategy", "mean")
            entry["step_reward"] = str(strategy)
        solve = task_dir / "solution" / "solve.sh"
        if solve.is_file():
            entry["solution"] = {"commands": [solve.read_text()]}
        agent_net, verifier_net = harbor_network.phases(toml.environment, toml.agent, toml.verifier)
        if agent_net.mode == PUBLIC:
            entry["internet"] = True
        elif agent_net.mode == ALLOWLIST and agent_net.hosts:
            entry["network"] = list(agent_net.hosts)
        if agent.timeout_sec:
            entry["budgets"] = {"timeout_s": agent.timeout_sec}
        grading = harbor_network.grading_keys(verifier_net)
        if judge is not None:
            # The judge runs on the host, its calls leaving from there: no grading sandbox,
            # and the verifier's network is no sandbox's.
            grading = {}
        elif toml.separate_verifier:  # without tests/Dockerfile: each step has its own
            if (task_dir / "tests" / "Dockerfile").is_file():
                grading.update(_verifier_environment(task_dir, toml, slug, out))
            if served := _service_files(task_dir, toml):  # checked in refusal
                grading["services"] = served
        elif spec["workdir"] == "/" or services or steps:  # steps: a shared verifier
            # Nothing marks where the agent's work lies, the tests may talk to its
            # sidecars, or the next step goes on in it: only its own sandbox has them.
            entry["grade_in_place"] = (
                "a multi-step task: each step is graded in the sandbox the next step goes on in"
                if steps
                else "its tests may talk to its sidecars, which stand beside the agent's sandbox"
                if services
                else "the task has no work dir (WORKDIR /): its files could be anywhere"
            )
            # The verifier's network, while graded there (``harbor_network.phase_keys``).
            shared = harbor_steps.networks(toml).shared if steps else verifier_net
            grading = {} if agent_net.same(shared) else harbor_network.phase_keys(shared)
        if grading:
            entry["grading"] = grading
        sandboxes = [
            entry,
            entry.get("grading") or {},
            *steps,
            *(s.get("grading") or {} for s in steps),
        ]
        if any(part.get("internet") for part in sandboxes):  # as written: what the run asks
            result.open_egress.append(rel)
        if judge is not None:
            result.judged[rel] = str(judge["model"]["api_key_env"])
        entries.append(entry)
        result.imported.append(rel)
        memory = max(memory, _memory_mb(env_toml) or 0)
        cpus = max(cpus, env_toml.cpus or 0.0)
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
