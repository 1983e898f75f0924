"""One running container of the ``docker`` backend: commands by ``docker exec``, files by
tar archives, liveness and the sweep of leftover processes, forced removal at the end.

Created and owned by ``harness.sandbox.docker.DockerProvider``; see that module for the
hardening every container gets. A container reaches its provider only through
``ContainerDaemon``: the daemon's API, its address, the bounded calls and its own removal.
"""

from __future__ import annotations

import functools
import io
import posixpath
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from harness import text
from harness.errors import SandboxError
from harness.sandbox import (
    docker_archive,
    docker_exec,
    docker_images,
    docker_sweep,
    grading_material,
)
from harness.sandbox.base import ExecResult, Sandbox
from harness.sandbox.docker_calls import ContainerDaemon, DaemonTimeout, docker_errors
from harness.sandbox.docker_images import PinnedImage, tar_directory
from harness.sandbox.output import OUTPUT_LIMIT, FileTooLarge
from harness.sandbox.workproduct import AGENT_UID, WorkProduct, absolute, new_archive, reowned

if TYPE_CHECKING:
    from harness.sandbox.docker_phase_network import PhaseNetwork
    from harness.sandbox.grading_material import GradingPlace

_HOST_GUARD_S = 15.0  # extra seconds the host waits beyond the in-container timeout
_TAR_SLACK = 64 * 1024  # bytes of tar headers and padding around one file's content


class DockerSandbox(Sandbox):
    """One running container. Commands run with ``docker exec`` (``bash -c``)."""

    net: PhaseNetwork | None = None
    """An agent's container: its network phase by phase (``docker_phase_network``)."""

    def __init__(
        self,
        daemon: ContainerDaemon,
        container_id: str,
        pinned: PinnedImage,
        workdir: str,
        socket_dir: str | None = None,
        image_id: str | None = None,
        agent_path: str | None = None,
    ):
        self.id = container_id
        self.image_id: str | None = image_id or pinned.image_id
        """The image this container runs: the pinned one, or that plus an agent CLI."""
        self.agent_path = agent_path
        self.workdir: str = workdir
        self.socket_dir = socket_dir
        self._daemon = daemon
        self._uid, self._gid = pinned.uid, pinned.gid
        self._destroyed = False
        self._own_kills: list[tuple[float, float]] = []
        """Wall-clock windows of the harness's own kills of this container: never evidence
        of a fault from outside (``docker_sweep.death_cause``)."""
        self.only_user: str | None = None
        """An agent's sandbox: the one user commands may run as (the unprivileged user,
        or root where the environment opts in); None: any (a grading sandbox)."""
        self._agent_user: str | None = None  # its only_user, while graded in place

    @property
    def _api(self):
        return self._daemon.api

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _fail(self, exc: BaseException, what: str) -> SandboxError:
        return SandboxError(f"sandbox {self.id[:12]}: {what} failed: {exc}")

    # ------------------------------------------------------------------ exec
    def _exec_create_sync(self, argv: list[str], user: str | None, env: dict[str, str]) -> str:
        return self._api.exec_create(
            self.id,
            argv,
            stdout=True,
            stderr=True,
            user=user or "",
            environment=env or None,
            workdir=self.workdir,
        )["Id"]

    def _exec_sync(self, exec_id: str, limit: int):
        """Blocking: run the exec, its output capped (``docker_exec.read_output``)."""
        try:
            return docker_exec.read_output(self._api, exec_id, limit)
        except ValueError as exc:
            # The command ran but its output is lost, and running it again could repeat
            # its effects: the trial's infrastructure failed, so the whole trial is retried
            # in a fresh container.
            raise self._fail(exc, "reading exec output") from exc

    async def open_process(self, cmd: str, *, stderr: Any) -> Any:
        """A long-lived ``bash -c cmd`` in the container with stdin and stdout attached (a
        tool server), through the ``docker exec -i`` command line; it ends when its stdin
        closes or the container is removed."""
        import os
        import shutil
        import subprocess

        docker = shutil.which("docker")
        if docker is None:
            raise SandboxError("a tool server on Docker needs the docker command line client")
        env = dict(os.environ)
        if self._daemon.base_url:
            env["DOCKER_HOST"] = self._daemon.base_url
        user = ["-u", self.only_user] if self.only_user else []
        argv = [docker, "exec", "-i", *user, "-w", self.workdir, self.id, "bash", "-c", cmd]
        try:
            return await anyio.open_process(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
            )
        except OSError as exc:
            raise self._fail(exc, "docker exec -i") from exc

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
        """Run ``cmd`` with ``bash -c`` in the workdir, ``output_limit`` bytes kept of each
        output stream (read while the command runs, see ``_exec_sync``).

        ``timeout`` is enforced inside the container (``timeout -s KILL``, which kills the
        command's whole process group), plus a host-side guard a few seconds later for
        commands whose detached children keep the output open. Never raises for a non-zero
        exit; raises ``SandboxError`` when the container is gone or Docker fails.
        """
        only = self.only_user
        user = user or only  # the agent's own user, whatever the container's
        if only not in (None, "0:0") and user not in (only, only.split(":")[0]):
            from harness.errors import AgentFailure

            raise AgentFailure(
                "agent_error", f"commands in this sandbox run as {only}, not as {user!r}"
            )
        argv, packed, upload = docker_exec.command_argv(cmd, stdin, timeout)
        env = {**(env or {}), **packed}
        if upload is not None:
            await self.write_file(*upload)

        start = time.monotonic()
        code: int | None = None
        try:
            exec_id = await self._daemon.calls(
                "exec", self._exec_create_sync, argv, user, env, container=self.id
            )
        except docker_errors() as exc:
            raise self._fail(exc, "exec") from exc
        fn = functools.partial(self._exec_sync, exec_id, output_limit)
        try:
            # On cancellation (a budget watchdog, Ctrl-C) the call is abandoned: its thread
            # ends when the container is destroyed, which the trial does next. A command
            # may rightly outlive its limit (a detached child holding the output open), so
            # a late one does not mark the container unresponsive by itself.
            limit = None if timeout is None else timeout + _HOST_GUARD_S
            code, out, err = await self._daemon.calls(
                "exec", fn, container=self.id, limit=limit, late_is_stuck=False
            )
        except DaemonTimeout:
            if self.id in self._daemon.calls.unresponsive:
                raise
        except docker_errors() as exc:
            raise self._fail(exc, "exec") from exc
        duration = time.monotonic() - start
        if code is None:  # host guard fired: the in-container timeout did not end the stream
            if not await self._running():
                raise SandboxError(f"sandbox {self.id[:12]}: container died during exec")
            return ExecResult(
                exit_code=124,
                stdout="",
                stderr=f"timed out after {timeout}s (output still held open by a detached process)",
                duration_s=duration,
                timed_out=True,
            )
        if (code is None or code >= 128) and not await self.alive():
            # The command died with its container (killed by the platform, or the daemon
            # shut down under it): infrastructure, never the agent's or the task's fault.
            raise SandboxError(f"sandbox {self.id[:12]}: container died during exec")
        timed_out = timeout is not None and code == 137 and duration >= timeout
        return ExecResult(
            exit_code=code,
            stdout=text.decode(out.value()),
            stderr=text.decode(err.value()),
            duration_s=duration,
            timed_out=timed_out,
            dropped=out.dropped + err.dropped,
        )

    async def alive(self) -> bool:
        """Is the container still running? Asked after a command failed; the daemon may
        report a killed command's exit code before the container's state, so ask a few
        times before saying yes. False also when the daemon does not answer."""
        for delay in (0.05, 0.1, 0.2, 0.4):
            if not await self._running():
                return False
            await anyio.sleep(delay)
        return await self._running()

    async def _running(self) -> bool:
        try:
            info = await self._daemon.calls(
                "inspect", self._api.inspect_container, self.id, container=self.id
            )
        except (DaemonTimeout, *docker_errors()):
            return False
        return bool(info.get("State", {}).get("Running"))

    # ------------------------------------------------------------------ files
    def _put(self, tar: bytes) -> None:
        if not self._api.put_archive(self.id, "/", tar):
            raise SandboxError(f"sandbox {self.id[:12]}: put_archive refused")

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        """A file's bytes; ``FileNotFoundError`` when it does not exist, ``FileTooLarge``
        when it holds more than ``limit`` bytes (checked before and while it is read)."""
        import docker.errors

        target = self._abs(path)

        def read() -> bytes:
            try:
                stream, stat = self._api.get_archive(self.id, target)
            except docker.errors.NotFound:
                self._api.inspect_container(self.id)  # raises NotFound when the sandbox is gone
                raise FileNotFoundError(target) from None
            if limit is not None and int(stat.get("size") or 0) > limit:
                raise FileTooLarge(target, limit)
            bound = None if limit is None else limit + _TAR_SLACK
            chunks, held = [], 0
            for chunk in stream:
                held += len(chunk)
                if bound is not None and held > bound:  # it grew after the size was read
                    raise FileTooLarge(target, limit or 0)
                chunks.append(chunk)
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.next()
                if member is None or member.isdir():
                    raise IsADirectoryError(target)
                if not member.isreg():  # a link (maybe dangling), a FIFO: not file contents
                    raise FileNotFoundError(f"{target} is not a regular file")
                fh = tar.extractfile(member)
                return fh.read() if fh else b""

        try:
            return await self._daemon.calls("files", read, container=self.id)
        except (FileNotFoundError, IsADirectoryError, FileTooLarge):
            raise
        except docker_errors() as exc:
            raise self._fail(exc, f"reading {target}") from exc

    async def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (relative to the workdir), creating parents; the file and
        new directories under the workdir belong to the environment's user."""
        target = self._abs(path)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for d in docker_images.parents_below(self.workdir, posixpath.dirname(target)):
                ti = tarfile.TarInfo(d)
                ti.type, ti.mode, ti.uid, ti.gid = tarfile.DIRTYPE, 0o755, self._uid, self._gid
                ti.mtime = int(time.time())
                tar.addfile(ti)
            ti = tarfile.TarInfo(target.lstrip("/"))
            ti.size, ti.mode, ti.mtime = len(data), 0o644, int(time.time())
            ti.uid, ti.gid = self._uid, self._gid
            tar.addfile(ti, io.BytesIO(data))
        try:
            await self._daemon.calls("files", self._put, buf.getvalue(), container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, f"writing {target}") from exc

    async def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host directory's contents into ``dest`` (relative to the workdir). Used for
        hidden material after the agent finished; owned by the environment's user."""
        target = self._abs(dest)
        parents = docker_images.parents_below(self.workdir, target)
        tar = await anyio.to_thread.run_sync(
            lambda: tar_directory(Path(src), target.lstrip("/"), self._uid, self._gid, parents)
        )
        try:
            await self._daemon.calls("files", self._put, tar, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, f"copying {src} to {target}") from exc

    def _export_sync(self, paths: list[str]) -> WorkProduct:
        import docker.errors

        out, tar = new_archive()
        product = WorkProduct(out, self.workdir)
        try:
            with tar:
                for path in paths:
                    target = absolute(self.workdir, path)
                    product.roots.append(target)
                    try:
                        stream, _stat = self._api.get_archive(self.id, target)
                    except docker.errors.NotFound:
                        self._api.inspect_container(self.id)  # NotFound: the sandbox is gone
                        product.missing.append(target)
                        continue
                    docker_archive.copy_renamed(
                        stream, tar, posixpath.basename(target), target.lstrip("/")
                    )
        except BaseException:
            product.close()
            raise
        return product

    async def export(self, paths: list[str]) -> WorkProduct:
        """``paths`` as one archive, through the daemon's archive API (nothing runs inside
        the container, which may be paused)."""
        try:
            return await self._daemon.calls("files", self._export_sync, paths, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, f"exporting {paths}") from exc

    async def import_product(self, product: WorkProduct, roots: list[str]) -> None:
        """Remove ``roots`` (as the unprivileged user: nothing of the agent has run here),
        then put their copies from ``product`` in place through the archive API, owned by
        that user."""
        targets = [absolute(self.workdir, r) for r in roots]
        cleared = await self.exec(
            docker_archive.clear_command(targets), user=str(AGENT_UID), timeout=120
        )
        if not cleared.ok:
            raise SandboxError(f"sandbox {self.id[:12]}: clearing {roots}: {cleared.stderr[-300:]}")
        tar = await anyio.to_thread.run_sync(
            reowned, product, AGENT_UID, AGENT_UID, roots, self.workdir
        )

        def put() -> None:
            with open(tar, "rb") as fh:
                if not self._api.put_archive(self.id, "/", fh):
                    raise SandboxError(f"sandbox {self.id[:12]}: put_archive refused")

        try:
            await self._daemon.calls("files", put, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, "importing the work product") from exc
        finally:
            tar.unlink(missing_ok=True)

    async def install_grading(self, hidden: Path | None) -> GradingPlace:
        """The grading material under ``/opt/harness`` through the archive API, owned by
        root and (hidden files, HOME) readable by root only; commands of the grader run as
        root with only CAP_SETUID/CAP_SETGID (``as-agent`` drops to uid 1000)."""
        from harness.sandbox.grading_material import (
            GRADING_ROOT,
            HIDDEN_PATH,
            GradingPlace,
            grader_env,
        )

        tar = await anyio.to_thread.run_sync(
            grading_material.docker_tar, hidden, GRADING_ROOT, grading_material.DOCKER_AS_AGENT
        )
        try:
            await self._daemon.calls("files", self._put, tar, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, "installing the grading material") from exc
        hidden_dir = HIDDEN_PATH if hidden is not None else None
        self._agent_user = self.only_user or self._agent_user
        self.only_user = None  # the agent's turn is over (a task graded in place)
        return GradingPlace(hidden_dir, "0:0", grader_env(self.workdir, hidden_dir))

    async def end_grading(self) -> None:
        """The agent's next step: its network again, then its commands run as its own user
        only (else it could run them as the grader's root, which may drop to any user)."""
        if self.net is not None:  # the grader's network is closed before the agent's turn
            await self.net.back()
        if self._agent_user is not None:
            self.only_user = self._agent_user

    async def switch_network(self, hosts: list[str], internet: bool = False) -> None:
        """The next phase's network (``docker_phase_network``); while the commands are the
        agent's, it is the agent's own, which ``end_grading`` goes back to."""
        if self.net is None:
            raise SandboxError(f"sandbox {self.id[:12]}: a grading sandbox keeps its network")
        await self.net.switch(hosts, internet, agents=self.only_user is not None)

    async def restore_files(self, files: Path) -> None:
        """The environment's files (the harness's copy) over the workdir, owned by uid 1000."""
        target = self.workdir.lstrip("/")
        tar = await anyio.to_thread.run_sync(
            lambda: tar_directory(files, target, AGENT_UID, AGENT_UID)
        )
        try:
            await self._daemon.calls("files", self._put, tar, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, "restoring the environment's files") from exc

    async def stop_agent(self) -> None:
        """Kill the container through the daemon (its init and every process in it die at
        once; nothing inside is asked, so no shim on PATH can answer instead) and wait for
        it to stop; its files stay readable through the archive API until it is removed.
        A container the agent already ended is fine."""
        import docker.errors

        def kill() -> None:
            try:
                self.kill_sync()
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: not running (the agent ended it)
                    raise
            self._api.wait(self.id, timeout=60)

        try:
            await self._daemon.calls("stop", kill, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, "stopping the container") from exc

    # ------------------------------------------------------------------ end of turn
    async def sweep(self) -> int:
        """Kill everything but init and its keeper (see ``docker_sweep``); when that cannot
        run, restart the container (files kept, every process gone). Returns the signals
        sent, -1 after a restart. It runs as every uid it finds (a grader's leftovers are
        root's), whoever the agent's commands run as."""
        only, self.only_user = self.only_user, None
        try:
            try:
                return await docker_sweep.sweep(self)
            except SandboxError:
                if not await self._running():
                    raise  # the agent (or the platform) ended it: the caller asks why
            await self.restart()
            return -1
        finally:
            self.only_user = only

    async def restart(self) -> None:
        """Kill the container (every process in it dies) and start it again, files kept."""

        def restart() -> None:
            self.kill_sync()
            self._api.wait(self.id, timeout=30)
            self._api.start(self.id)

        try:
            await self._daemon.calls("restart", restart, container=self.id)
        except docker_errors() as exc:
            raise self._fail(exc, "restarting after a failed sweep") from exc

    def kill_sync(self) -> None:
        """The harness's own kill through the daemon, remembered as such: a container that
        dies after it (say its init cannot start again) died of what is inside it."""
        before = time.time()
        try:
            self._api.kill(self.id)
        finally:
            self._own_kills.append((before, time.time()))

    async def death_cause(self) -> str | None:
        """Why the container stopped, when the agent did it (the daemon's evidence; the
        harness's own kills are not evidence of anything)."""
        return await self._daemon.calls(
            "inspect",
            docker_sweep.death_cause,
            self._api,
            self.id,
            list(self._own_kills),
            container=self.id,
        )

    # ------------------------------------------------------------------ teardown
    async def destroy(self, interrupted: bool = False) -> None:
        """Kill and remove the container (no grace period). Idempotent; never raises:
        a container that cannot be removed is logged and left to ``gc``."""
        if self._destroyed:
            return
        self._destroyed = True
        with anyio.CancelScope(shield=True):
            await self._daemon.remove(self.id)


# ----------------------------------------------------------------------------- provider
