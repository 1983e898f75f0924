"""The sandbox boundary: where a trial's commands run.

A ``SandboxProvider`` is chosen by name (``local``, ``docker``). Before any trial it
``prepare``s every environment the run needs (build or resolve images and pin them to
immutable ids); then it ``create``s one fresh ``Sandbox`` per trial attempt, which is
destroyed when the attempt ends, whatever happened. Backends subclass the two base classes
here: they mark what is required and give every optional capability a default.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from harness.config.models import Environment, Limits
from harness.config.models import Options as BackendOptions
from harness.errors import SandboxError
from harness.sandbox.output import OUTPUT_LIMIT, STATE_OUTPUT_LIMIT
from harness.sandbox.workproduct import WorkProduct

if TYPE_CHECKING:
    from harness.config.task_parts import ServiceFiles
    from harness.sandbox.grading_material import GradingPlace


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
    """The hosts this sandbox may reach; None: the environment's ``network`` (a grading
    sandbox: none). A task that lists hosts of its own gets the union (see
    ``Task.network``)."""
    internet: bool = False
    """Open egress (``harness.network``: the task asked for it and the suite allows it)."""
    grader_root: bool = False
    """A grading sandbox whose grader keeps the backend's default root capabilities (to
    install test tools: ``grading.root``)."""
    socket_dir: str | None = None
    """A host directory of unix sockets (the metering proxy's) that an isolated backend
    mounts read-only at ``SOCKET_MOUNT``: the one host path a container may see, asked for
    only by agents that run a program inside the sandbox against the proxy."""
    agent: AgentBuild | None = None
    """The ready-made agent CLI the trial's arm runs, to be found at ``agent.path`` inside
    the sandbox: Docker creates it from the environment's image with the CLI built in, bwrap
    binds the staged executable there read-only."""
    grading: bool = False
    """A grading sandbox: commands run as the grader (root with only the capabilities to
    drop to the unprivileged user), no network, never an agent image."""
    in_place: bool = False
    """An agent's sandbox its task grades in place: it may become a grading sandbox later."""


SOCKET_MOUNT = "/run/harness"
AGENT_DIR = "/opt/harness/agents"
"""Where an image built for a ready-made agent holds its executable (``AgentBuild.path``)."""


@dataclass(frozen=True)
class AgentBuild:
    """One pinned agent program to install into images at build time: a ready-made agent's
    CLI, or your own program (the command agent's ``program``).

    ``fetch`` is blocking and returns it on this host (a CLI installed once from the package
    registry into a cache; your program copied once into a cache, by content); Docker adds it
    to the task's pinned image as one layer of its own, bwrap binds it read-only at the same
    path, ``unsafe-local`` runs it from the host cache."""

    key: str
    """Directory name below ``AGENT_DIR`` and lock-file key, e.g. ``codex-0.171.0``."""
    spec: str
    """Where the bytes come from, e.g. ``@openai/codex@0.171.0-linux-x64`` (a registry spec) or
    ``file:agent/@sha256:0123456789ab`` (your program)."""
    executable: str
    """The executable's file name, e.g. ``codex``; for a ``tree``, the entry inside the
    folder ('' for the folder itself)."""
    fetch: Callable[[], Path] = field(compare=False, repr=False)
    tree: bool = False
    """``fetch`` returns a folder, installed whole at ``install_path`` (your program); else a
    single executable file."""

    @property
    def install_path(self) -> str:
        """Where the fetched file or folder goes inside the sandbox."""
        return f"{AGENT_DIR}/{self.key}" if self.tree else self.path

    @property
    def path(self) -> str:
        """The executable's (or the program folder's) path inside an image built for it."""
        return f"{AGENT_DIR}/{self.key}/{self.executable}".rstrip("/")


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

    async def export(self, paths: list[str]) -> WorkProduct:
        """Take ``paths`` (relative to the workdir, or absolute) out of the sandbox as data:
        one tar archive on the host, read by the backend itself (never by a command inside
        the sandbox). Missing paths are listed in ``WorkProduct.missing``. Raises
        ``SandboxError`` when the sandbox failed, ``BadWorkProduct`` when what it holds
        cannot be archived. Default: this backend cannot (``SandboxError``)."""
        raise SandboxError(f"sandbox {self.id}: this backend cannot export files")

    async def export_services(self, wanted: dict[str, ServiceFiles], product: WorkProduct) -> None:
        """Append files of the services beside this sandbox (``grading.services``: their
        collect commands run first) to ``product``. Default: there are none to take
        (``SandboxError``; only Docker runs services)."""
        raise SandboxError(f"sandbox {self.id}: no services beside it to take files from")

    async def import_product(self, product: WorkProduct, roots: list[str]) -> None:
        """Replace each absolute path of ``roots`` in this (grading) sandbox by its copy in
        ``product`` (removed when the product has none), owned by the unprivileged user.
        Default: this backend cannot (``SandboxError``)."""
        raise SandboxError(f"sandbox {self.id}: this backend cannot import files")

    async def install_grading(self, hidden: Path | None) -> GradingPlace:
        """Make this sandbox a grading sandbox: the task's ``hidden`` files (the harness's
        own copy) readable and writable only by the grader, the ``as-agent`` helper that
        runs the code under test as the unprivileged user, and the grader's clean
        environment. Default: this backend cannot (``SandboxError``)."""
        raise SandboxError(f"sandbox {self.id}: this backend cannot grade")

    async def end_grading(self) -> None:
        """A sandbox graded in place goes back to the agent (the next step of a multi-step
        task): what ``install_grading`` opened for the grader (commands as another user,
        the grader's binds) is closed again. Default: nothing was opened."""
        return None

    async def switch_network(self, hosts: list[str], internet: bool = False) -> None:
        """Give this running sandbox the next phase's network: ``hosts`` (none: no network)
        or open egress (``harness.network``), for a task graded in place whose grading has
        another network than its agent, or a step whose agent has one of its own. Called
        only between phases, when none of the agent's processes runs; ``end_grading`` goes
        back to the agent's. Default: this backend cannot (``SandboxError``; a task that
        needs it is refused when the suite loads)."""
        raise SandboxError(f"sandbox {self.id}: this backend cannot change a sandbox's network")

    async def restore_files(self, files: Path) -> None:
        """Put the environment's own files (the harness's copy) back into the workdir over
        whatever is there. Default: this backend cannot (``SandboxError``)."""
        raise SandboxError(f"sandbox {self.id}: this backend cannot restore files")

    async def stop_agent(self) -> None:
        """The agent's turn is over: stop everything it left running, so the files taken out
        next are final. Default: ``sweep``."""
        await self.sweep()

    async def open_process(self, cmd: str, *, stderr: Any) -> Any | None:
        """Start a long-lived ``bash -c cmd`` in the sandbox with its stdin and stdout
        attached (a task's tool server), its stderr to the file descriptor ``stderr``;
        killed with the sandbox. Default: this backend cannot keep a process attached
        (None: the tool server is not offered)."""
        return None


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
    def isolates(cls, options: BackendOptions) -> bool:
        """Do sandboxes built with these options keep commands off the host? (A wrapping
        backend answers as the backend it wraps does.)"""
        return cls.isolated

    @classmethod
    def runs_agent_programs(cls, options: BackendOptions) -> bool:
        """Can an agent program that talks to the model run with this backend: inside its
        sandboxes, or on the host because nothing is isolated? False refuses the suite at
        load time (``harness.resolve``) rather than run the program unconfined."""
        return cls.mounts_sockets or not cls.isolates(options)

    @classmethod
    def honours(cls, options: BackendOptions) -> frozenset[str]:
        """What its sandboxes honour of a task's policy: network modes (``harness.network``:
        none, allowlist, open), ``switch-network`` (``Sandbox.switch_network``: a running
        sandbox changes policy between phases), ``grader-root`` (``grading.root``),
        ``services`` and ``grader-anywhere`` (a grader may write outside the work dir and
        ``/tmp``, e.g. a reward file in ``/logs``); a task asking for more is refused when
        the suite loads.
        Default: no network only."""
        return frozenset({"none"})

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
async def snapshot_state(sandbox: Sandbox, environment: Environment) -> dict | None:
    """The environment's state in ``sandbox`` now, as a JSON document (what state-diff
    grading compares): ``command``: the environment's dump, run in the sandbox; ``files``:
    path -> content hash and mode under the declared roots, computed on the host from the
    sandbox's archive (nothing runs inside); ``none``: no state. Trials take the final state
    through ``harness.grading`` instead (never from a command in the agent's sandbox).
    Raises ``SandboxError`` when the dump fails or prints something that is not a state."""
    import anyio.to_thread

    from harness.sandbox.workproduct import BadWorkProduct, files_state, parse_state

    spec = environment.spec.state
    if spec.kind == "none":
        return None
    try:
        if spec.kind == "files":
            product = await sandbox.export(spec.paths)
            try:
                return await anyio.to_thread.run_sync(files_state, product, spec.paths)
            finally:
                product.close()
        assert spec.command, "state.command is required for kind 'command'"
        result = await sandbox.exec(spec.command, timeout=120, output_limit=STATE_OUTPUT_LIMIT)
        what = f"state dump of environment '{environment.name}'"
        if result.dropped:
            raise SandboxError(f"{what} printed more than {STATE_OUTPUT_LIMIT} bytes")
        if not result.ok:
            raise SandboxError(
                f"{what} failed (exit {result.exit_code}): {result.stderr.strip()[-300:]}"
            )
        return parse_state(result.stdout, what)
    except BadWorkProduct as exc:
        raise SandboxError(str(exc)) from exc
