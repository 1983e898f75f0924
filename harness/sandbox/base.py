"""The sandbox boundary: where a trial's commands run.

A ``SandboxProvider`` is chosen by name (``local``, ``docker``). Before any trial it
``prepare``s every environment the run needs (build or resolve images and pin them to
immutable ids); then it ``create``s one fresh ``Sandbox`` per trial attempt, which is
destroyed when the attempt ends, whatever happened. Backends subclass the two base classes
here: they mark what is required and give every optional capability a default.
"""

from __future__ import annotations

import abc
import json
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.config.models import Environment, Limits
from harness.config.models import Options as BackendOptions
from harness.sandbox.output import OUTPUT_LIMIT, STATE_OUTPUT_LIMIT


@dataclass
class ExecResult:
    """How a command ended and what it printed: each stream as text (``harness.text.decode``)
    cut to the command's output cap (``harness.sandbox.output``)."""

    exit_code: int
    stdout: str
    stderr: str
    duration_s: float = 0.0
    timed_out: bool = False
    dropped: int = 0
    """Bytes of output over the cap, not kept (both streams)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass
class SandboxRequest:
    """Everything a provider needs to create one sandbox for one trial attempt."""

    environment: Environment
    image_id: str | None
    labels: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    network: list[str] | None = None
    """The hosts this sandbox may reach; None: the environment's ``network``. A task that
    lists hosts of its own gets the union (see ``Task.network``)."""
    socket_dir: str | None = None
    """A host directory of unix sockets (the metering proxy's) that an isolated backend
    mounts read-only at ``SOCKET_MOUNT``: the one host path a container may see, asked for
    only by agents that run a program inside the sandbox against the proxy."""
    agent: AgentBuild | None = None
    """The ready-made agent CLI the trial's arm runs, to be found at ``agent.path`` inside
    the sandbox: Docker creates it from the environment's image with the CLI built in, bwrap
    binds the staged executable there read-only."""


SOCKET_MOUNT = "/run/harness"
AGENT_DIR = "/opt/harness/agents"
"""Where an image built for a ready-made agent holds its executable (``AgentBuild.path``)."""


@dataclass(frozen=True)
class AgentBuild:
    """One pinned build of a ready-made agent's CLI, to install into images at build time.

    ``fetch`` is blocking and returns the executable on this host (installed once from the
    package registry into a cache); Docker copies it into an image, bwrap binds it read-only,
    ``unsafe-local`` runs it as a host program."""

    key: str
    """Directory name below ``AGENT_DIR`` and lock-file key, e.g. ``codex-0.171.0``."""
    spec: str
    """The package registry spec the bytes come from, e.g. ``@openai/codex@0.171.0-linux-x64``."""
    executable: str
    """The executable's file name, e.g. ``codex``."""
    fetch: Callable[[], Path] = field(compare=False, repr=False)

    @property
    def path(self) -> str:
        """The executable's path inside an image built for it."""
        return f"{AGENT_DIR}/{self.key}/{self.executable}"


def network_hosts(environment: Environment, task_hosts: list[str] | None = None) -> list[str]:
    """The hosts a task's sandbox may reach: its environment's plus its own, sorted."""
    return sorted({*environment.spec.network, *(task_hosts or [])})


class Sandbox(abc.ABC):
    """One fresh sandbox for one trial attempt. Subclass it: the four abstract methods are
    required, the rest have defaults a backend overrides when it can do better."""

    id: str
    image_id: str | None = None
    workdir: str
    socket_dir: str | None = None
    """The host side of ``SOCKET_MOUNT`` when the request asked for one and the backend
    mounted it (Docker, bwrap); None elsewhere."""
    agent_path: str | None = None
    """Where the requested ``AgentBuild``'s executable is inside this sandbox, when the
    backend put it there (Docker: built into the image; bwrap: bound read-only); None: not
    provided."""
    isolated: bool = True
    """False only where commands run on the host as they are (``unsafe-local``): there an
    agent program may run as a host process, since nothing is isolated anyway. An isolated
    sandbox without ``agent_path`` or ``socket_dir`` never lets it run on the host instead."""

    @abc.abstractmethod
    async def exec(
        self,
        cmd: str,
        *,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = OUTPUT_LIMIT,
    ) -> ExecResult:
        """Run ``cmd`` with ``bash -c`` in the workdir. Never raises for a non-zero exit;
        raises ``SandboxError`` only when the sandbox itself failed. Of each output stream
        at most ``output_limit`` bytes are held, first and last halves (``output``)."""

    @abc.abstractmethod
    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        """A file's bytes (``FileNotFoundError`` when missing); with ``limit``, never more
        than that held: a bigger file raises ``output.FileTooLarge``."""

    @abc.abstractmethod
    async def write_file(self, path: str, data: bytes) -> None: ...

    @abc.abstractmethod
    async def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host directory's contents into ``dest`` (relative to the workdir)."""

    @abc.abstractmethod
    async def sweep(self) -> int:
        """The agent's turn is over: kill every process still running in the sandbox
        (before the final state is read and hidden material enters). Returns how many
        were signalled. Raises ``SandboxError`` when some cannot be killed."""

    async def death_cause(self) -> str | None:
        """After a ``SandboxError``: the reason, when the backend's evidence shows the agent
        itself ended the sandbox (killed its init, ran out of memory); else None (the
        default: no such evidence)."""
        return None

    @abc.abstractmethod
    async def destroy(self, interrupted: bool = False) -> None:
        """Remove the sandbox and everything started in it. Idempotent, never raises.
        ``interrupted``: the trial was cancelled (Ctrl-C, a lost worker), so a backend may
        skip graceful steps; the trial's ``finally`` passes it truthfully."""

    async def alive(self) -> bool:
        """Whether the sandbox itself still runs; a failed setup command in a dead sandbox
        is an infrastructure error, not a broken task. Default: yes."""
        return True


class SandboxProvider(abc.ABC):
    """A sandbox backend, registered by name in ``harness.sandbox.BACKENDS``.

    Required: ``prepare``, ``create``, ``close``. Optional capabilities have defaults here
    (never probed with ``hasattr``): ``gc``, ``prepare_networks``, ``lock_entries``,
    ``healthy``. ``Options`` is the typed model of the suite's ``sandbox_options``; its
    fields are the constructor's keyword arguments.
    """

    name: ClassVar[str]
    isolated: bool
    Options: ClassVar[type[BackendOptions]] = BackendOptions
    mounts_sockets: ClassVar[bool] = False
    """Sandboxes honour ``SandboxRequest.socket_dir`` and ``.agent``: a program run inside
    reaches the metering proxy through the mounted socket, and a ready-made agent's CLI is
    at ``Sandbox.agent_path``. An isolated backend without it cannot run such agents."""

    @classmethod
    def runs_agent_programs(cls, options: BackendOptions) -> bool:
        """Can an agent program that talks to the model run with this backend: inside its
        sandboxes, or on the host because nothing is isolated? False refuses the suite at
        load time (``harness.resolve``) rather than run the program unconfined."""
        return cls.mounts_sockets or not cls.isolated

    @classmethod
    def validate_options(cls, raw: dict[str, Any]) -> BackendOptions:
        """``sandbox_options`` checked against ``Options`` (raises ``ValidationError``)."""
        return cls.Options.model_validate(raw)

    @classmethod
    def from_options(cls, options: BackendOptions) -> SandboxProvider:
        """A provider built from validated options (the keys the suite set, as given)."""
        return cls(**{k: v for k, v in options if k in options.model_fields_set})

    @abc.abstractmethod
    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        """Build or resolve each environment's image once; return name -> pinned image id."""

    @abc.abstractmethod
    async def create(self, request: SandboxRequest) -> Sandbox: ...

    @abc.abstractmethod
    async def close(self) -> None:
        """Release everything the provider holds (sandboxes not yet destroyed included)."""

    def gc(self) -> list[str]:
        """Synchronous: remove sandboxes left behind by killed runs on this host; return
        their ids. Default: nothing to collect."""
        return []

    async def prepare_networks(self, wanted: Iterable[tuple[Environment, list[str]]]) -> None:
        """Before any trial, set up the network rules of tasks that add hosts of their own
        (environment, allowed hosts), so a run whose rules cannot be installed refuses to
        start. Default: nothing to prepare (the backend does not restrict egress)."""
        return None

    async def lock_entries(self, environments: list[Environment]) -> dict[str, dict[str, Any]]:
        """Lock-file entries per environment name. Default: the pinned image id."""
        ids = await self.prepare(environments)
        return {name: {"image_id": image_id} for name, image_id in ids.items()}

    async def prepare_agents(
        self, wanted: list[tuple[Environment, AgentBuild]]
    ) -> dict[str, dict[str, str]]:
        """At image-build time, before any trial: build for each (environment, agent CLI)
        pair an image holding the CLI; return environment -> ``AgentBuild.key`` -> image id.
        Default: nothing to build (``unsafe-local`` runs the host's executable)."""
        return {}

    async def healthy(self) -> bool:
        """Is the infrastructure up? The circuit breaker probes it while most attempts
        crash. Default: yes (the next attempt itself is then the probe)."""
        return True

    def pinned_images(self) -> dict[str, Any]:
        """What the driver pinned per environment, for worker nodes to adopt (Ray). Default:
        nothing to share (each node prepares its own)."""
        return {}

    async def adopt_images(self, pinned: dict[str, Any], fetch: ImageFetch | None) -> None:
        """On a worker node: use the driver's ``pinned_images()``, loading an image this
        node lacks from the archive ``fetch(image_id)`` returns (None: refuse such an
        image with ``SandboxError``). Default: nothing to adopt."""
        return None


ImageFetch = Callable[[str], bytes]
"""Blocking: the archive of one image (by id), e.g. shipped from the driver's node."""


# ----------------------------------------------------------------------------- state
_FS_STATE_SCRIPT = r"""
import hashlib, json, os, stat, sys
out = {}
def add(p):
    try:
        st = os.lstat(p)
        mode = oct(stat.S_IMODE(st.st_mode))
        if stat.S_ISLNK(st.st_mode):
            out[p] = {"type": "link", "target": os.readlink(p)}
        elif stat.S_ISDIR(st.st_mode):
            out[p] = {"type": "dir", "mode": mode}
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as fh:
                out[p] = {"type": "file", "sha256": hashlib.sha256(fh.read()).hexdigest(), "mode": mode}
    except OSError as exc:
        out[p] = {"type": "unreadable", "error": exc.strerror}
for root in json.loads(sys.argv[1]):
    root = os.path.normpath(root)
    if not os.path.lexists(root):
        continue
    add(root)
    if os.path.isdir(root) and not os.path.islink(root):
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                add(os.path.join(d, name))
print(json.dumps({"files": out}, sort_keys=True))
"""


async def snapshot_state(sandbox: Sandbox, environment: Environment) -> dict | None:
    """The environment's state as a JSON document (what state-diff grading compares).

    ``command``: the environment's dump command prints JSON. ``files``: path -> content
    hash and mode under the declared roots. ``none``: no state (answer-only tasks).
    """
    from harness.errors import SandboxError

    spec = environment.spec.state
    if spec.kind == "none":
        return None
    if spec.kind == "command":
        assert spec.command, "state.command is required for kind 'command'"
        cmd = spec.command
    else:
        cmd = f"python3 -c {shlex.quote(_FS_STATE_SCRIPT)} {shlex.quote(json.dumps(spec.paths))}"
    result = await sandbox.exec(cmd, timeout=120, output_limit=STATE_OUTPUT_LIMIT)
    if result.dropped:
        raise SandboxError(
            f"state dump of environment '{environment.name}' printed more than "
            f"{STATE_OUTPUT_LIMIT} bytes"
        )
    if not result.ok:
        raise SandboxError(
            f"state dump of environment '{environment.name}' failed "
            f"(exit {result.exit_code}): {result.stderr.strip()[-300:]}"
        )
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise SandboxError(
            f"state dump of environment '{environment.name}' printed invalid JSON: {exc}"
        ) from exc
