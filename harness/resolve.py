"""Resolve: the names in a loaded suite become the classes and checked options that run it.

``harness.config`` reads files into plain data. This step, one layer up, looks every name up
in its registry (agents, graders, sandbox backends; ``module:Class`` paths too) and
validates each one's parameters against the typed model that class declares (the executor,
which only ``harness run`` uses, is bound by ``harness.executors.bind`` the same way). Every
problem is a ``ConfigError`` naming the file, the field and its line, raised before any
sandbox or trial exists; the CLI prints it as one line and exits 2.
"""

from __future__ import annotations

import inspect
import logging
import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from graders import Grader, build_grader
from harness import network_checks
from harness.agent_process import runs_in_child
from harness.agents import AGENTS, Agent
from harness.config.loader import (
    LoadedTask,
    Path_,
    ResolvedSuite,
    field_path,
    from_validation,
    load_suite,
    nearest_line,
)
from harness.config.models import Arm, Options
from harness.errors import ConfigError
from harness.pairwise.setup import PairwiseJudgeSetup, suite_judge
from harness.registry import RegistryError
from harness.sandbox import SandboxProvider, backend_class, open_backend
from harness.sandbox.base import AgentBuild
from harness.suitepath import import_beside

if TYPE_CHECKING:
    from harness.agent_process.jail import JailView


@dataclass(frozen=True)
class AgentBinding:
    """An arm's agent class with its validated params."""

    cls: type[Agent]
    params: Options
    async_run: bool = True
    """``run`` is a coroutine function (checked by preflight: else the arm is refused)."""

    def make(self) -> Agent:
        """A fresh agent for one trial attempt."""
        return self.cls(self.params)

    def wants_socket_dir(self, arm: Arm, environment: bool = True) -> bool:
        return self.cls.wants_socket_dir(self.params, arm, environment)

    def build(self, arm: Arm) -> AgentBuild | None:
        """The program the arm installs into images (``Agent.build``)."""
        return self.cls.build(arm, self.params)


@dataclass(frozen=True)
class SandboxBinding:
    """The chosen sandbox backend (``auto`` already decided) with its validated options."""

    name: str
    cls: type[SandboxProvider]
    options: Options

    def open(self) -> SandboxProvider:
        return open_backend(self.name, self.cls, self.options)


@dataclass
class Resolved(ResolvedSuite):
    """A loaded suite plus what its names resolved to. It is a ``ResolvedSuite``, so code
    that needs only the data (plan, report) takes it unchanged."""

    agents: dict[str, AgentBinding] = field(default_factory=dict)
    """Arm name -> its agent."""
    graders: dict[str, list[Grader]] = field(default_factory=dict)
    """Task id -> its graders, built once."""
    sandbox: SandboxBinding | None = None
    pairwise: PairwiseJudgeSetup | None = None
    """The suite's pairwise judge (``pairwise:``, checked at load), run when the run ends."""


def choose_sandbox(requested: str, file: str = "suite", line: int | None = None) -> str:
    """'auto' means docker when a daemon answers, else bwrap when bubblewrap works here.

    The bare ``unsafe-local`` backend (which isolates nothing) is never chosen for you: with
    neither Docker nor bubblewrap, ``auto`` is an error that says how to get one or how to
    ask for ``unsafe-local`` by name.
    """
    if requested != "auto":
        return requested
    from harness.sandbox.bwrap import bwrap_available
    from harness.sandbox.docker import docker_available

    if docker_available():
        return "docker"
    if bwrap_available():
        return "bwrap"
    raise ConfigError(
        file,
        "sandbox",
        "sandbox 'auto' found neither a Docker daemon nor a working bubblewrap "
        "(apt-get install bubblewrap); name `--sandbox unsafe-local` to run with NO isolation",
        line,
    )


def load(
    path: str | Path, overrides: Mapping[str, object] | None = None, store_url: str | None = None
) -> Resolved:
    """Load a suite (``harness.config``) and resolve it: the one entry point for commands.
    ``module:Class`` names may live in modules beside the suite file; a subset drawn from a
    2PL fit reads it from the store at ``store_url`` (--store, else the usual default)."""
    from harness.anchors.fits import StoreFits

    import_beside(path)
    return resolve(load_suite(path, overrides, fits=StoreFits(store_url)))


def resolve(config: ResolvedSuite, sandbox: str | None = None) -> Resolved:
    """Look up every name of ``config`` and validate its parameters.

    ``sandbox`` overrides the suite's backend (``auto`` is decided here). Raises
    ``ConfigError`` naming the file, field and line of the first problem.
    """
    suite = config.suite
    data = {f.name: getattr(config, f.name) for f in fields(ResolvedSuite)}
    chosen = _sandbox(config, _choose(config, sandbox or suite.sandbox))
    agents = {arm.name: _agent(config, i, arm, chosen) for i, arm in enumerate(suite.arms)}
    _check_agent_programs(config, agents, chosen)
    _check_host_programs(config, agents, chosen)
    network_checks.check(config, chosen.name, chosen.cls.honours(chosen.options))
    graders = {lt.task.id: _graders(lt) for lt in config.tasks}
    _check_reward_files(config, graders, chosen)
    _check_observed_rules(config, agents, graders)
    return Resolved(
        **data,
        agents=agents,
        graders=graders,
        sandbox=chosen,
        pairwise=suite_judge(suite.pairwise, config.path, config.lines) if suite.pairwise else None,
    )


def config_error(config: ResolvedSuite, loc: Path_, message: str) -> ConfigError:
    """A one-line error at ``loc`` of the suite file, with its line."""
    return ConfigError(str(config.path), field_path(loc), message, nearest_line(config.lines, loc))


def checked_options(
    config: ResolvedSuite,
    loc: Path_,
    check: Callable[[dict[str, object]], Options],
    raw: dict[str, object],
) -> Options:
    """``check(raw)`` (a model's validation), its first error as a one-line ConfigError."""
    try:
        return check(raw)
    except ValidationError as exc:
        raise from_validation(exc, config.path, config.lines, loc) from None
    except RegistryError as exc:  # an inner backend named in the options
        raise config_error(config, loc, str(exc)) from None


def _agent(config: ResolvedSuite, i: int, arm: Arm, sandbox: SandboxBinding) -> AgentBinding:
    if runs_in_child(arm.agent):
        return _child_agent(config, i, arm, sandbox)
    try:
        cls = AGENTS.load(arm.agent)
    except RegistryError as exc:
        raise config_error(config, ("arms", i, "agent"), str(exc)) from None
    context = {"suite_dir": str(config.path.parent)}  # paths in params are beside the suite

    def check(raw: dict[str, object]) -> Options:
        return cls.Params.model_validate(raw, context=context)

    params = checked_options(config, ("arms", i, "params"), check, arm.params)
    return AgentBinding(cls, params, inspect.iscoroutinefunction(cls.run))


def _child_agent(config: ResolvedSuite, i: int, arm: Arm, sandbox: SandboxBinding) -> AgentBinding:
    """Checked in a process of the agent's own jail: the class imports, is an ``Agent``,
    and takes the params. Refused when the jail cannot be made (except on a backend that
    isolates nothing) or would show the agent any of the run's task material."""
    from harness.agent_process import child_agent, describe

    view = _jail_view(config, i, arm, sandbox)
    answer = describe(arm.agent, arm.params, view)
    if "agent_error" in answer:
        raise config_error(config, ("arms", i, "agent"), str(answer["agent_error"]))
    if "params_error" in answer:
        problem = answer["params_error"]
        loc = ("arms", i, "params", *problem["loc"])
        raise config_error(config, loc, str(problem["message"]))
    limits = config.suite.limits
    return AgentBinding(
        child_agent(arm.agent, view, limits), Options(), bool(answer.get("async_run"))
    )


def _jail_view(config: ResolvedSuite, i: int, arm: Arm, sandbox: SandboxBinding) -> JailView | None:
    from harness.agent_process import jail

    problem = jail.unavailable()
    if problem is not None:
        if not sandbox.cls.isolated:  # unsafe-local: a plain process, as isolated as its commands
            logging.getLogger(__name__).warning(
                "arm '%s': no agent jail on this host (%s): its agent runs as a plain "
                "process that can read what you can, like every command on %s",
                arm.name,
                problem,
                sandbox.name,
            )
            return None
        raise config_error(
            config,
            ("arms", i, "agent"),
            f"module:Class agents run in a bubblewrap jail, which this host cannot make "
            f"({problem}); fix that, or use `--sandbox unsafe-local` (no isolation at all)",
        )
    view = jail.view_for(arm.agent)
    material = [lt.file for lt in config.tasks]
    material += [lt.hidden_dir for lt in config.tasks if lt.hidden_dir is not None]
    material += [env.root for env in config.environments.values()]
    shown = view.exposes([Path(p).resolve() for p in material])
    if shown:
        raise config_error(
            config,
            ("arms", i, "agent"),
            f"the agent's jail would show it {shown[0]} (the agent's module or package is "
            f"{', '.join(view.agent_paths) or '?'}): keep agent modules out of the folders "
            "that hold tasks, hidden tests and environments",
        )
    return view


def _graders(loaded: LoadedTask) -> list[Grader]:
    built = []
    for g, spec in enumerate(loaded.task.graders):
        loc = (*loaded.prefix, "graders", g)
        try:
            grader = build_grader(spec)
        except RegistryError as exc:
            where = (*loc, "type")
            raise ConfigError(
                str(loaded.file), field_path(where), str(exc), nearest_line(loaded.lines, where)
            ) from None
        except ValidationError as exc:
            raise from_validation(exc, loaded.file, loaded.lines, loc) from None
        _check_material(loaded, loc, grader)
        built.append(grader)
    return built


def _check_reward_files(
    config: ResolvedSuite, graders: dict[str, list[Grader]], sandbox: SandboxBinding
) -> None:
    """Refuse a grader whose reward file lies outside the work dir and ``/tmp`` (Harbor's
    ``/logs/verifier``) on a backend whose sandboxes cannot be written there (``bwrap``'s
    read-only root): its tests could never write it, and every trial, the oracle's too,
    would fail."""
    if "grader-anywhere" in sandbox.cls.honours(sandbox.options):
        return
    for loaded in config.tasks:
        env = config.environments.get(loaded.task.environment or "")
        for g, grader in enumerate(graders[loaded.task.id]):
            path = getattr(grader.params, "reward_file", None)
            if env is None or not path or _writable(path, env.spec.workdir):
                continue
            loc = (*loaded.prefix, "graders", g, "reward_file")
            raise ConfigError(
                str(loaded.file),
                field_path(loc),
                f"task '{loaded.task.id}': its tests write their reward to {path}, outside "
                f"the work dir and /tmp, which sandbox '{sandbox.name}' cannot let them "
                "write (its root is read-only); use `--sandbox docker`",
                nearest_line(loaded.lines, loc) or loaded.line,
            )


def _writable(path: str, workdir: str) -> bool:
    """Is ``path`` (relative to the work dir, or absolute) in the work dir or ``/tmp``?"""
    full = posixpath.normpath(posixpath.join(workdir, path))
    return any(full == d or full.startswith(d.rstrip("/") + "/") for d in (workdir, "/tmp"))


def _check_material(loaded: LoadedTask, loc: Path_, grader: Grader) -> None:
    """Every file the grader will run or read from the task's hidden directory exists now,
    before any trial: a missing test script is a load error, never the agent's failure."""
    params = grader.params
    reads = getattr(params, "reads_workdir", None)
    if callable(reads) and reads() and (loaded.task.environment is None or loaded.task.steps):
        where = (*loc, "tools") if "tools" in type(params).model_fields else loc
        why = "a multi-step task" if loaded.task.steps else "a task without an environment"
        raise ConfigError(
            str(loaded.file),
            field_path(where),
            f"{grader.type_name} explores the agent's work dir, but this is {why} (no work "
            "dir is taken out after the agent's turn)",
            nearest_line(loaded.lines, where),
        )
    where = (*loc, "command") if "command" in type(params).model_fields else loc
    line = nearest_line(loaded.lines, where)
    dirs = [loaded.step_hidden_dir(i) for i in range(len(loaded.task.steps))]
    for hidden in dict.fromkeys(dirs or [loaded.hidden_dir]):
        _check_files(loaded, grader, hidden, where, line)


def rel_to(hidden: Path, loaded: LoadedTask) -> str:
    """A hidden directory as the task file names it."""
    return os.path.relpath(hidden, loaded.file.parent)


def _check_files(
    loaded: LoadedTask, grader: Grader, hidden: Path | None, where: Path_, line: int | None
) -> None:
    params = grader.params
    if hidden is None:
        if params.needs_hidden_dir():
            raise ConfigError(
                str(loaded.file),
                field_path(where),
                f"{grader.type_name} reads $HIDDEN_DIR, but the task declares no 'hidden:' "
                "directory",
                line,
            )
        return
    for rel in params.hidden_files():
        target = hidden / rel
        ok = target.is_dir() if rel.endswith("/") else target.is_file()
        if not ok:
            what = "directory" if rel.endswith("/") else "file"
            raise ConfigError(
                str(loaded.file),
                field_path(where),
                f"{grader.type_name} runs $HIDDEN_DIR/{rel}, but {rel_to(hidden, loaded)} has no "
                f"{what} {rel} ({target} not found)",
                line,
            )


def _choose(config: ResolvedSuite, requested: str) -> str:
    return choose_sandbox(requested, str(config.path), nearest_line(config.lines, ("sandbox",)))


def _sandbox(config: ResolvedSuite, name: str) -> SandboxBinding:
    try:
        cls = backend_class(name)
    except RegistryError as exc:
        message = str(exc).replace("(known: ", "(known: auto, ")
        raise config_error(config, ("sandbox",), message) from None
    options = config.suite.sandbox_options
    checked = checked_options(config, ("sandbox_options",), cls.validate_options, options)
    return SandboxBinding(name, cls, checked)


def _check_host_programs(
    config: ResolvedSuite, agents: dict[str, AgentBinding], sandbox: SandboxBinding
) -> None:
    """Refuse an arm that runs its program on the host (``where: host``) beside an isolating
    sandbox: it would run in an empty directory that holds none of the task's files. Tasks
    without an environment have no sandbox to be beside: host is fine there."""
    if not sandbox.cls.isolates(sandbox.options) or not any(
        t.task.environment for t in config.tasks
    ):
        return
    for i, arm in enumerate(config.suite.arms):
        if agents[arm.name].cls.runs_on_host_beside_sandbox(agents[arm.name].params, arm):
            raise config_error(
                config,
                ("arms", i, "params", "where"),
                f"where: host runs the program on this machine (in a jail), outside sandbox "
                f"'{sandbox.name}', in an empty directory: it would see none of the task's "
                "files; use where: sandbox (params.program installs your program into the "
                "image), or --sandbox unsafe-local to run it on the host on purpose",
            )


def _check_agent_programs(
    config: ResolvedSuite, agents: dict[str, AgentBinding], sandbox: SandboxBinding
) -> None:
    """Refuse an arm whose program must run inside the sandbox against the metering proxy
    (a ready-made CLI, a ``command`` with ``where: sandbox`` and a model) when the backend
    cannot host it: it would otherwise run unconfined on the host, or fail as the agent's
    fault for want of a way out to the proxy."""
    if sandbox.cls.runs_agent_programs(sandbox.options):
        return
    for i, arm in enumerate(config.suite.arms):
        if agents[arm.name].wants_socket_dir(arm, any(t.task.environment for t in config.tasks)):
            raise config_error(
                config,
                ("arms", i, "agent"),
                f"agent '{arm.agent}' runs its program inside the sandbox against the "
                f"metering proxy, which sandbox '{sandbox.name}' cannot host (no socket "
                "mount); use `--sandbox docker` or `--sandbox bwrap`",
            )


def _check_observed_rules(
    config: ResolvedSuite, agents: dict[str, AgentBinding], graders: dict[str, list[Grader]]
) -> None:
    """Refuse trajectory rules that cannot be checked for an arm: an agent program
    (``command``, ``claude-code``, ``codex``) acts in its sandbox unseen, so its required
    actions could never be observed and its forbidden ones never caught. A task that counts
    the program's own reports (``reported_events: true``) says so and is allowed."""
    from graders.trajectory import TrajectoryRules

    blind = [arm for arm in config.suite.arms if not agents[arm.name].cls.observes_actions]
    if not blind:
        return
    for loaded in config.tasks:
        for g, grader in enumerate(graders[loaded.task.id]):
            if isinstance(grader, TrajectoryRules) and not grader.params.reported_events:
                arm = blind[0]
                where = (*loaded.prefix, "graders", g)
                raise ConfigError(
                    str(loaded.file),
                    field_path(where),
                    f"arm '{arm.name}' runs agent '{arm.agent}', a program whose actions in "
                    "its sandbox the harness does not observe, so these trajectory rules "
                    "cannot be checked for it; set `reported_events: true` on this grader to "
                    "count what the program reports about itself, or leave the arm out",
                    nearest_line(loaded.lines, where),
                )


__all__ = [
    "AgentBinding",
    "Resolved",
    "SandboxBinding",
    "choose_sandbox",
    "load",
    "resolve",
]
