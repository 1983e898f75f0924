"""Typed configuration of environment files: the image, the tools the agent may call, how
state is read for grading, and the tool server.

Split from ``harness.config.models`` (which re-exports every name here), one file per kind
of file read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from harness.config.base import Seconds, Strict


class ImageRecipe(Strict):
    """Where the image comes from: a Dockerfile built from the environment's folder, or an
    image reference; exactly one. Either resolves to one immutable image id when a run starts,
    and every trial of the run uses that id."""

    dockerfile: str | None = Field(None, description="path relative to the environment dir")
    ref: str | None = Field(None, description="an image reference, e.g. harness-base:bookworm")

    @model_validator(mode="after")
    def _one(self) -> ImageRecipe:
        if bool(self.dockerfile) == bool(self.ref):
            raise ValueError("give exactly one of 'dockerfile' or 'ref'")
        return self


def _no_parameters() -> dict[str, object]:
    """The JSON Schema of a tool that takes no arguments."""
    return {"type": "object", "properties": {}}


class ToolSpec(Strict):
    """A tool the agent may call. Each call runs ``command`` in the sandbox's workdir (as the
    environment's ``user``) with the call's arguments as one JSON object on stdin (``{}`` for
    none). Exit status 0 is a successful call and the agent gets the command's stdout; any
    other status is an error result and the agent gets stdout followed by stderr. An unknown
    tool name is an error result ``error: unknown tool 'NAME'`` (exit 127), arguments that
    are not a JSON object ``error: tool arguments must be a JSON object`` (exit 2), a call
    past ``timeout_s`` ``error: tool 'NAME' timed out after Ns``; none of these is retried or
    ends the trial: the agent reads them and goes on. With a ``tool_server`` the server
    answers each call instead (the protocol of ``harness/tools/server.py``). Every call is a
    step of the trajectory (tool, arguments, output, ok), charged to ``budgets.max_steps``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    """the tool's name as the agent sees it (letters, digits, '_', '-')"""
    description: str
    """what the tool does, shown to the agent"""
    parameters: dict[str, object] = Field(default_factory=_no_parameters)
    """The tool's JSON Schema, relayed to the model as written (never read here)."""
    command: str | None = Field(
        None,
        description="shell command in the sandbox; optional when the environment has a "
        "tool_server, which then serves this tool",
    )
    timeout_s: Seconds = 30.0
    """seconds one call may run before it is an error result"""
    terminates: bool = Field(
        False, description="calling it ends the episode (it runs, then the agent is stopped)"
    )


class StateSpec(Strict):
    """How to snapshot state: a command printing JSON, a file-system walk, or nothing."""

    kind: Literal["none", "command", "files"] = "none"
    """none, command (a command printing the state as JSON) or files (a walk of paths)"""
    command: str | None = None
    """for 'command': run in the workdir; its stdout, JSON, is the state"""
    paths: list[str] = Field(
        default_factory=list,
        description="'files': the roots whose entries make the state; 'command': what the "
        "dump reads (copied from the agent's sandbox into a fresh grading sandbox where the "
        "dump runs; default: the whole workdir, with the environment's own files restored)",
    )
    ignore: list[str] = Field(default_factory=list, description="dotted paths, '*' wildcards")


class ToolServerSpec(Strict):
    """One long-lived process per trial serving the environment's tools (and its state) over
    JSON lines on stdin/stdout; the protocol is documented in ``harness/tools/server.py``."""

    command: str = Field(description="started once per trial in the sandbox, in the workdir")
    state: bool = Field(
        True, description="the server answers snapshot requests: the state is read from it"
    )
    startup_timeout_s: float = Field(60.0, gt=0, description="seconds to wait for 'ready'")


class ServiceHealth(Strict):
    """How a service says it is ready: Docker's healthcheck, run inside the service's
    container. The agent starts only after every service with one is healthy; a service
    that is not healthy after ``start_period_s`` plus ``retries`` failed checks fails the
    trial's setup (the task's fault, never retried)."""

    command: list[str] = Field(min_length=1)
    """the check, an argv run in the service (exit 0: healthy); ``["sh", "-c", "..."]`` for
    a shell command"""
    interval_s: Seconds = 1.0
    """seconds between two checks"""
    timeout_s: Seconds = 5.0
    """seconds one check may take"""
    retries: int = Field(30, ge=1, le=10_000)
    """failed checks in a row (after the start period) that make it unhealthy"""
    start_period_s: float = Field(0.0, ge=0, le=3600)
    """seconds at the start whose failed checks do not count"""


class ServiceSpec(Strict):
    """A container started beside the agent's for each trial (a database, a web app):
    fresh per trial, on the trial's own network (reachable by its name, no way out), built
    or resolved once per run and pinned by id like the environment's image."""

    image: ImageRecipe
    """its image: ``ref``, or ``dockerfile`` (relative to ``context``)"""
    context: str = Field(".", description="the build context, a dir relative to the environment")
    command: list[str] | None = None
    """the argv it runs; default: the image's own entrypoint and command"""
    env: dict[str, str] = Field(default_factory=dict)
    """environment variables of the service (never the agent's)"""
    volumes: dict[str, str] = Field(default_factory=dict)
    """shared volume name (from the environment's ``volumes``) -> where it is mounted"""
    healthcheck: ServiceHealth | None = None
    """when it is ready; none: ready once started"""
    depends_on: list[str] = Field(default_factory=list)
    """services started (and healthy) before this one"""


class EnvironmentSpec(Strict):
    """What a task runs in: its image, working directory and files, setup commands, the
    tools the agent may call, how its state is read for grading, and its network."""

    name: str
    """must equal the environment's folder name"""
    description: str = ""
    """what the environment is, shown in reports"""
    version: str = "1"
    """bump it when the environment changes meaning: compare refuses to pair runs of two
    versions"""
    image: ImageRecipe = Field(default_factory=lambda: ImageRecipe(ref="harness-base:latest"))
    """the image sandboxes start from"""
    workdir: str = "/work"
    """the directory commands run in"""
    files: str | None = Field(None, description="dir (relative) copied into the workdir")
    setup: list[str] = Field(default_factory=list)
    """shell commands run in every new sandbox before the task's setup"""
    state: StateSpec = Field(default_factory=StateSpec)
    """how the state graders compare is read"""
    tools: list[ToolSpec] = Field(default_factory=list)
    """the tools the agent may call"""
    policy: str | None = Field(None, description="file with the policy shown to the agent")
    network: list[str] = Field(default_factory=list, description="hosts the sandbox may reach")
    user: str | None = Field(
        None,
        description="the user agent commands run as: default the unprivileged uid 1000; "
        "'root' opts in to root (the report says so)",
    )
    tool_server: ToolServerSpec | None = Field(
        None, description="serve the tools from one process per trial instead of one per call"
    )
    services: dict[str, ServiceSpec] = Field(default_factory=dict)
    """containers beside the agent's, by name (also their host name); Docker only"""
    volumes: dict[str, str] = Field(default_factory=dict)
    """volumes shared per trial with services, by name -> where the agent's sandbox mounts
    them (a fresh, empty, world-writable 64 MiB tmpfs per trial)"""

    @model_validator(mode="after")
    def _tool_commands(self) -> EnvironmentSpec:
        if self.tool_server is None:
            for i, tool in enumerate(self.tools):
                if not tool.command:
                    raise ValueError(f"tools.{i}.command is required without a tool_server")
        return self

    @model_validator(mode="after")
    def _service_names(self) -> EnvironmentSpec:
        for name, service in self.services.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", name):
                raise ValueError(f"services.{name}: a service name is a host name (a-z, 0-9, -)")
            for dep in service.depends_on:
                if dep not in self.services or dep == name:
                    raise ValueError(f"services.{name}.depends_on: no other service '{dep}'")
            for volume in service.volumes:
                if volume not in self.volumes:
                    raise ValueError(
                        f"services.{name}.volumes: '{volume}' is not one of the environment's "
                        "volumes"
                    )
        service_order(self.services)  # raises on a dependency cycle
        return self


def service_order(services: dict[str, ServiceSpec]) -> list[str]:
    """Service names, each after the services it depends on (declared order otherwise)."""
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise ValueError(f"services.{name}.depends_on: a dependency cycle")
        visiting.add(name)
        for dep in services[name].depends_on:
            visit(dep)
        visiting.discard(name)
        done.append(name)

    for name in services:
        visit(name)
    return done


@dataclass(frozen=True)
class Environment:
    """An environment spec together with the directory it was loaded from."""

    spec: EnvironmentSpec
    root: Path

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def files_dir(self) -> Path | None:
        return (self.root / self.spec.files) if self.spec.files else None
