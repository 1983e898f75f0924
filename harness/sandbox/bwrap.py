"""The ``bwrap`` backend: isolation without Docker, from Linux namespaces (bubblewrap).

Each trial gets a fresh host directory (``trial_dirs``) holding its work dir (the
environment's files, mounted at the environment's ``workdir``) and its ``/tmp``. Every
command runs in a NEW ``bwrap`` sandbox over that directory:

* a root of its own: the host's ``/usr`` (and the ``/bin``, ``/lib`` links), a few files of
  ``/etc`` needed to run programs, all read-only; ``/proc``, ``/dev``; the work dir and
  ``/tmp`` are the only writable places. Nothing else of the host is visible.
* new user, PID, mount, IPC, UTS, cgroup and network namespaces: the command runs as uid
  1000 with no capabilities, sees only its own processes, and has no network at all (only a
  loopback of its own). A task or environment that lists network hosts is refused before
  the run starts: this backend cannot honour an allowlist.
* ``--die-with-parent`` and ``--new-session``; when the command ends, its PID namespace
  ends and the kernel kills everything it started: nothing outlives a command, let alone
  the agent's turn. State persists between commands only in files.
* limits from the suite's ``limits`` (see ``bwrap_limits``): a cgroup per trial (pids,
  memory with swap, a CPU quota) when the host allows, else ``ulimit -v``; a disk quota (``disk_quota``);
  time from each command's timeout and the agent's budget.
* two more read-only host paths, only when the trial's arm asks: the metering proxy's
  socket directory at ``SOCKET_MOUNT`` (the in-sandbox relay reaches the proxy through it;
  the network stays unshared), and a ready-made agent's staged executable at
  ``AgentBuild.path``, the same paths Docker uses. The sandbox's read-only file view plays
  the part of Docker's derived image: the CLI is fetched once per run (``prepare_agents``)
  and pinned by its npm spec and the SHA-256 of the file (``lock_entries``).

Requires the ``bwrap`` binary (Debian/Ubuntu: ``apt-get install bubblewrap``) and user
namespaces.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import Field

from harness import text
from harness.config.models import Limits, Options
from harness.errors import EnvironmentBuildError, SandboxError
from harness.sandbox import bwrap_limits, disk_quota, grading_material, trial_dirs
from harness.sandbox.base import (
    SOCKET_MOUNT,
    AgentBuild,
    Environment,
    ExecResult,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
    network_hosts,
)
from harness.sandbox.bwrap_root import (
    UID,
    bwrap_available,
    launch_env,
    make_trial_root,
    remove_trial_root,
    system_binds,
)
from harness.sandbox.launch_marker import LAUNCHES, RELAUNCH_DELAY_S, StartMarker, run_marked
from harness.sandbox.local import _dir_digest
from harness.sandbox.output import OUTPUT_LIMIT, read_at_most
from harness.sandbox.process import Finished, kill_group
from harness.sandbox.workproduct import WorkProduct, replace_host_paths, tar_host_paths

if TYPE_CHECKING:
    from harness.sandbox.grading_material import GradingPlace

log = logging.getLogger(__name__)


class BwrapSandbox(Sandbox):
    """One trial's directory; every ``exec`` is a fresh ``bwrap`` sandbox over it."""

    def __init__(
        self,
        root: Path,
        workdir: str,
        image_id: str | None,
        limits: Limits,
        cgroup: bwrap_limits.TrialCgroup | None,
        socket_dir: str | None = None,
        agent: tuple[Path, AgentBuild] | None = None,
    ):
        self.id = f"bwrap-{root.name[-8:]}"
        self.socket_dir = socket_dir
        self._agent = agent
        """(staged host file or folder, its build) of the arm's agent program, bound
        read-only at ``build.install_path``."""
        self.agent_path = agent[1].path if agent else None
        self.image_id = image_id
        self.root = root
        self.workdir = workdir
        self._work = root / "work"
        self._tmp = root / "tmp"
        self._limits = limits
        self._cgroup = cgroup
        self._groups: set[int] = set()
        self._destroyed = False
        self._grading_binds: list[str] = []  # the grader's (install_grading, end_grading)

    # ------------------------------------------------------------------ paths
    def _host_path(self, path: str) -> Path:
        """Map a sandbox path (relative to the workdir, or absolute under the workdir or
        /tmp) to the host; refuse anything that leaves them (``..``, links)."""
        p = Path(path)
        if p.is_absolute():
            for inside, host in ((Path(self.workdir), self._work), (Path("/tmp"), self._tmp)):
                if p == inside or inside in p.parents:
                    base, rel = host, p.relative_to(inside)
                    break
            else:
                raise PermissionError(f"path outside the sandbox's writable dirs: {path}")
        else:
            base, rel = self._work, p
        target = (base / rel).resolve()
        if not target.is_relative_to(base.resolve()):
            raise PermissionError(f"path escapes the sandbox: {path}")
        return target

    # ------------------------------------------------------------------ exec
    def _argv(self, cmd: str, env: dict[str, str], marker: StartMarker | None = None) -> list[str]:
        args = ["bwrap", *system_binds()]
        args += ["--ro-bind", str(self.root / "passwd"), "/etc/passwd"]
        args += ["--ro-bind", str(self.root / "group"), "/etc/group", "--proc", "/proc"]
        args += ["--dev", "/dev", "--bind", str(self._tmp), "/tmp"]
        args += ["--bind", str(self._work), self.workdir, *self._extra_binds()]
        args += ["--remount-ro", "/", "--chdir", self.workdir]
        args += ["--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(UID)]
        args += ["--hostname", "sandbox", "--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL", "--clearenv"]
        base = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": self.workdir,
            "LANG": "C.UTF-8",
            "HARNESS_WORKDIR": self.workdir,
            **env,
        }
        for key, value in base.items():
            args += ["--setenv", key, value]
        start = marker.script() if marker is not None else ""
        if self._cgroup is None:  # no cgroup: cap memory per process at least
            kb = bwrap_limits.parse_bytes(self._limits.memory) // 1024
            start = f"ulimit -v {kb}; {start}"
        if start:
            args += ["bash", "-c", f'{start}exec bash -c "$1"', "bash", cmd]
        else:
            args += ["bash", "-c", cmd]
        if self._cgroup is not None:
            join = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1"; shift; n=$((n-1)); done; exec "$@"'
            files = self._cgroup.procs_files
            args = ["/bin/sh", "-c", join, "sh", str(len(files)), *files, *args]
        return args

    def _extra_binds(self) -> list[str]:
        """The proxy's socket directory and the agent's executable, read-only, when asked.
        The sandbox's uid 1000 is the harness's own uid outside (user namespace), and the
        proxy's socket is mode 0666, so the relay inside may connect to it."""
        args = []
        if self.socket_dir is not None:
            args += ["--ro-bind", self.socket_dir, SOCKET_MOUNT]
        if self._agent is not None:
            args += ["--ro-bind", str(self._agent[0]), self._agent[1].install_path]
        return args + self._grading_binds

    async def open_process(self, cmd: str, *, stderr: Any) -> Any:
        """A long-lived ``cmd`` in the sandbox with stdin and stdout attached (a tool
        server); killed with the sandbox's other process groups on destroy."""
        if self._destroyed:
            raise SandboxError(f"sandbox {self.id} was destroyed")
        try:
            proc = await anyio.open_process(
                self._argv(cmd, {}),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
                env=launch_env(),
            )
        except OSError as exc:
            raise SandboxError(f"bwrap exec failed: {exc}") from exc
        self._groups.add(proc.pid)
        return proc

    async def exec(
        self, cmd, *, stdin=None, timeout=None, user=None, env=None, output_limit=OUTPUT_LIMIT
    ) -> ExecResult:
        """Run ``cmd`` with ``bash -c`` in a new sandbox over the trial's directory.

        ``user`` is ignored: every command runs as the sandbox's one unprivileged user."""
        if self._destroyed:
            raise SandboxError(f"sandbox {self.id} was destroyed")
        if isinstance(stdin, str):
            stdin = stdin.encode()
        start = time.monotonic()
        for launch in range(LAUNCHES):
            done, started = await self._run_once(cmd, dict(env or {}), stdin, timeout, output_limit)
            stderr = text.decode(done.stderr)
            if started:
                break
            if launch == LAUNCHES - 1 or done.timed_out:  # bwrap's own failure, every time
                raise SandboxError(f"sandbox {self.id}: {stderr.strip()[:300]}")
            await anyio.sleep(RELAUNCH_DELAY_S * (launch + 1))
        return ExecResult(
            exit_code=done.exit_code,
            stdout=text.decode(done.stdout),
            stderr=stderr,
            duration_s=time.monotonic() - start,
            timed_out=done.timed_out,
            dropped=done.dropped,
        )

    async def _run_once(
        self, cmd: str, env: dict[str, str], stdin: bytes | None, timeout: float | None, limit: int
    ) -> tuple[Finished, bool]:
        """One launch of ``cmd`` (``launch_marker.run_marked``), its process group killed with
        the sandbox's others on destroy."""
        cgroup = self._cgroup
        return await run_marked(
            lambda marker: self._argv(cmd, env, marker),
            stdin=stdin,
            timeout=timeout,
            output_limit=limit,
            env=launch_env(),
            groups=self._groups,
            limit_events=cgroup.limit_events if cgroup is not None else None,
        )

    async def sweep(self) -> int:
        """Kill every process of this trial (the agent's turn is over). Returns how many
        were still running: with one namespace per command there are normally none."""
        for pgid in list(self._groups):
            kill_group(pgid)
        left = 0
        if self._cgroup is not None:
            left = len(self._cgroup.pids())
            await anyio.to_thread.run_sync(self._cgroup.kill_all)
        return left

    async def death_cause(self) -> str | None:
        """A bwrap sandbox has no process of its own to die: commands fail by themselves."""
        return None

    def oom_killed(self) -> bool:
        return self._cgroup is not None and self._cgroup.oom_killed()

    # ------------------------------------------------------------------ files
    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        target = str(self._host_path(path))
        return await anyio.to_thread.run_sync(read_at_most, target, limit)

    async def write_file(self, path: str, data: bytes) -> None:
        target = anyio.Path(self._host_path(path))
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_bytes(data)

    async def copy_in(self, src: Path, dest: str) -> None:
        target = self._host_path(dest)
        await anyio.to_thread.run_sync(trial_dirs.copy_tree, Path(src), target)

    def _host_of(self, path: str) -> Path | None:
        """The host path of an absolute sandbox path under the work dir or /tmp (links are
        not followed: this names the entry itself), or None."""
        p = Path(path)
        for inside, host in ((Path(self.workdir), self._work), (Path("/tmp"), self._tmp)):
            if p == inside or inside in p.parents:
                return host / p.relative_to(inside)
        return None

    async def export(self, paths: list[str]) -> WorkProduct:
        """``paths`` as one archive, read from the trial's host directory (the commands that
        could write there are all dead: each died with its PID namespace)."""
        return await anyio.to_thread.run_sync(tar_host_paths, self.workdir, paths, self._host_of)

    async def import_product(self, product: WorkProduct, roots: list[str]) -> None:
        await anyio.to_thread.run_sync(
            replace_host_paths, product, roots, self.workdir, self._host_of
        )

    async def install_grading(self, hidden: Path | None) -> GradingPlace:
        """The harness's own hidden dir bound read-only, the as-agent helper (a nested
        sandbox over the work dir, without /proc: the code under test sees none of the
        grader's processes) and a HOME of the grader's own."""
        from harness.sandbox.grading_material import (
            AS_AGENT_PATH,
            GRADER_HOME,
            HIDDEN_PATH,
            GradingPlace,
            grader_env,
        )

        helper = self.root / "as-agent"
        home = self.root / "grader-home"

        def write() -> None:
            helper.write_text(grading_material.bwrap_as_agent(system_binds(), self.workdir))
            helper.chmod(0o755)
            home.mkdir(mode=0o700, exist_ok=True)

        await anyio.to_thread.run_sync(write)
        binds = ["--ro-bind", str(helper), AS_AGENT_PATH, "--bind", str(home), GRADER_HOME]
        if hidden is not None:
            binds += ["--ro-bind", str(hidden), HIDDEN_PATH]
        self._grading_binds = binds
        hidden_dir = HIDDEN_PATH if hidden is not None else None
        return GradingPlace(hidden_dir, None, grader_env(self.workdir, hidden_dir))

    async def end_grading(self) -> None:
        """The agent's next step sees neither the hidden files nor the grader's HOME."""
        self._grading_binds = []

    async def restore_files(self, files: Path) -> None:
        await anyio.to_thread.run_sync(
            lambda: shutil.copytree(files, self._work, symlinks=True, dirs_exist_ok=True)
        )

    async def destroy(self, interrupted: bool = False) -> None:
        """Kill what is left, remove the cgroup and the trial's directory. Idempotent."""
        if self._destroyed:
            return
        self._destroyed = True
        await self.sweep()

        def remove() -> None:
            if self._cgroup is not None:
                self._cgroup.remove()
            remove_trial_root(self.root)

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(remove)


class BwrapOptions(Options):
    """``sandbox_options`` of the ``bwrap`` backend."""

    base_dir: str | None = Field(
        None, description="where trial directories are made; default: the system's temp dir"
    )


class BwrapProvider(SandboxProvider):
    """Sandboxes from bubblewrap namespaces over per-trial host directories."""

    name = "bwrap"
    isolated = True
    mounts_sockets = True
    Options = BwrapOptions

    def __init__(self, base_dir: str | None = None, limits: Limits | None = None):
        if shutil.which("bwrap") is None:
            raise SandboxError(
                "bubblewrap is not installed (apt-get install bubblewrap), "
                "or choose `--sandbox docker`"
            )
        self.base_dir = base_dir
        self.limits = limits or Limits()
        self._agents: dict[str, tuple[AgentBuild, Path, str]] = {}
        """``AgentBuild.key`` -> (build, staged host executable, its SHA-256)."""
        self._agent_lock: anyio.Lock | None = None
        self.cgroups = bwrap_limits.mechanism()
        self.quota = disk_quota.mechanism_for(self.name)
        log.info("bwrap sandbox: limits via %s, disk quota via %s", self.cgroups, self.quota)
        if (warning := bwrap_limits.host_warning(self.cgroups)) is not None:
            log.warning("sandbox 'bwrap': %s", warning)

    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        for env in environments:
            self._refuse_network(env.name, network_hosts(env))
        if not await anyio.to_thread.run_sync(bwrap_available):
            raise SandboxError(
                "bwrap cannot create namespaces here (are user namespaces disabled?)"
            )
        return {env.name: f"bwrap:{_dir_digest(env.root)}" for env in environments}

    async def prepare_agents(
        self, wanted: list[tuple[Environment, AgentBuild]]
    ) -> dict[str, dict[str, str]]:
        """Fetch ONCE per CLI build its executable into the host cache and hash it; every
        sandbox of the build binds that file. Returns environment -> key -> ``sha256:...``
        (the same bytes on every environment). A CLI that cannot be fetched raises
        ``EnvironmentBuildError`` before any trial."""
        if self._agent_lock is None:
            self._agent_lock = anyio.Lock()
        out: dict[str, dict[str, str]] = {}
        for env, build in wanted:
            async with self._agent_lock:
                if build.key not in self._agents:
                    exe = await anyio.to_thread.run_sync(build.fetch)
                    digest = await anyio.to_thread.run_sync(_digest, exe)
                    self._agents[build.key] = (build, exe, digest)
            out.setdefault(env.name, {})[build.key] = f"sha256:{self._agents[build.key][2]}"
        return out

    async def lock_entries(self, environments: list[Environment]) -> dict[str, dict[str, Any]]:
        """Per environment: its files digest (as ``image_id``) and the agent CLIs prepared so
        far, each as its npm spec and the SHA-256 of the executable sandboxes bind."""
        ids = await self.prepare(environments)
        agents = {
            key: {"npm": build.spec, "sha256": digest}
            for key, (build, _exe, digest) in sorted(self._agents.items())
        }
        return {name: {"image_id": image_id, "agents": agents} for name, image_id in ids.items()}

    async def prepare_networks(self, wanted) -> None:
        for env, hosts in wanted:
            self._refuse_network(env.name, hosts)

    @staticmethod
    def _refuse_network(env_name: str, hosts: list[str], internet: bool = False) -> None:
        if hosts or internet:
            raise EnvironmentBuildError(
                f"environment '{env_name}' (or one of its tasks) asks for "
                f"{'open egress' if internet else f'network hosts {hosts}'}: the bwrap sandbox "
                "has no network and cannot honour an allowlist; run it with `--sandbox docker`"
            )

    async def create(self, request: SandboxRequest) -> BwrapSandbox:
        # Refused at load already (``honours``); never a sandbox on another network.
        self._refuse_network(request.environment.name, request.network or [], request.internet)
        agent, image_id = None, request.image_id
        if request.agent is not None:  # the arm's CLI, staged on this host
            await self.prepare_agents([(request.environment, request.agent)])
            _build, exe, digest = self._agents[request.agent.key]
            agent = (exe, request.agent)
            # What the trial ran: the task's files plus this CLI (as Docker's derived image).
            image_id = f"{image_id}+{request.agent.key}@sha256:{digest[:12]}"

        def make() -> BwrapSandbox:
            disk = request.limits.disk if self.quota == "tmpfs" else None
            root = make_trial_root(self.base_dir, request.environment.files_dir, disk)
            try:
                limits = request.limits
                cgroup = bwrap_limits.create(
                    root.name, self.cgroups, limits.memory, limits.pids, limits.cpus
                )
            except BaseException:
                remove_trial_root(root)
                raise
            return BwrapSandbox(
                root,
                request.environment.spec.workdir,
                image_id,
                request.limits,
                cgroup,
                request.socket_dir,
                agent,
            )

        try:
            return await anyio.to_thread.run_sync(make)
        except OSError as exc:
            raise SandboxError(f"creating a bwrap sandbox failed: {exc}") from exc

    async def close(self) -> None:
        return None

    def gc(self, running_run_ids=None) -> list[str]:
        """Remove trial directories (and cgroups) left by killed runs on this host."""
        return [str(p) for p in trial_dirs.gc(self.base_dir)]


def _digest(path: Path) -> str:
    """The SHA-256 of a staged executable, or of a program folder's files (names, modes and
    contents: ``docker_images.files_digest``)."""
    if path.is_dir():
        from harness.sandbox.docker_images import files_digest

        return files_digest(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


__all__ = ["BwrapOptions", "BwrapProvider", "BwrapSandbox", "bwrap_available"]
