"""The ``docker`` backend: one fresh, hardened container per trial attempt.

Images are built or resolved once per run and pinned to immutable ids
(:mod:`harness.sandbox.docker_images`); each sandbox is a NEW container created from the
pinned id (never a tag), never reused across trials, and force-removed when the attempt ends.

Hardening of every container (defaults, see ``DockerProvider``):

* no network (``network_mode=none``) unless the environment (or the task) lists hosts in
  ``network``: then a bridge of its own whose egress reaches only those hosts
  (``docker_network``: iptables rules in ``DOCKER-USER``; the run refuses to start when
  they cannot be installed).
* all capabilities dropped, ``no-new-privileges``, Docker's default seccomp profile;
* memory (swap included), PID and CPU limits from the suite's ``limits``;
* Docker's init as PID 1 (reaps zombies) running ``sleep infinity``: the image's own
  entrypoint and command are ignored, so images need ``sleep`` (coreutils) and ``bash``;
* the environment's ``user`` as the default user of every command (non-root when declared);
* no host mounts (one exception: a ``command`` agent running its program inside the
  sandbox against the metering proxy gets the proxy's socket directory, read-only, at
  ``/run/harness``; see ``harness.sandbox.relay``), and no host environment variables:
  only the image's ``ENV`` and ``HARNESS_WORKDIR``.

All Docker SDK calls run in worker threads (``anyio.to_thread``) bounded by one
``CapacityLimiter`` and share one client whose connection pool matches that limit.
Docker API failures raise ``SandboxError`` (infrastructure: retried); broken recipes raise
``EnvironmentBuildError`` (never retried).
"""

from __future__ import annotations

import base64
import functools
import io
import logging
import posixpath
import tarfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from pydantic import Field

from harness.config.models import Options
from harness.errors import EnvironmentBuildError, SandboxError
from harness.sandbox import docker_gc, docker_images, docker_network, docker_sweep
from harness.sandbox.base import (
    SOCKET_MOUNT,
    Environment,
    ExecResult,
    ImageFetch,
    Sandbox,
    SandboxProvider,
    SandboxRequest,
    network_hosts,
)
from harness.sandbox.docker_images import PinnedImage, check_lock, tar_directory

log = logging.getLogger(__name__)

T = TypeVar("T")

NO_DAEMON_HINT = (
    "start one (as root: bash docker/ci-setup.sh) or choose `--sandbox local` "
    "(no isolation: commands run on this machine)"
)
_STDIN_ENV = "HARNESS_STDIN_B64"
_STDIN_ENV_MAX = 96 * 1024  # bytes of base64; one env string may hold 128 KiB on Linux
_HOST_GUARD_S = 15.0  # extra seconds the host waits beyond the in-container timeout


def _errors():
    import docker.errors
    import requests.exceptions
    import urllib3.exceptions

    # urllib3's own errors escape unwrapped from streamed responses (exec output, archives)
    # when the daemon goes away mid-stream.
    return (
        docker.errors.DockerException,
        requests.exceptions.RequestException,
        urllib3.exceptions.HTTPError,
        OSError,
    )


def make_client(base_url: str | None, timeout: float, pool: int):
    """A Docker SDK client: `base_url`, else the environment (DOCKER_HOST, TLS settings)."""
    import docker

    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout, max_pool_size=pool)
    return docker.from_env(timeout=timeout, max_pool_size=pool)


def docker_available(base_url: str | None = None, timeout: float = 3.0) -> bool:
    """True when a Docker daemon answers a ping within ``timeout`` seconds (for ``auto``)."""
    try:
        client = make_client(base_url, timeout, 1)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


# ----------------------------------------------------------------------------- sandbox
class DockerSandbox(Sandbox):
    """One running container. Commands run with ``docker exec`` (``bash -c``)."""

    def __init__(
        self,
        provider: DockerProvider,
        container_id: str,
        pinned: PinnedImage,
        workdir: str,
        socket_dir: str | None = None,
    ):
        self.id = container_id
        self.image_id: str | None = pinned.image_id
        self.workdir: str = workdir
        self.socket_dir = socket_dir
        self._provider = provider
        self._uid, self._gid = pinned.uid, pinned.gid
        self._destroyed = False

    @property
    def _api(self):
        return self._provider._client.api

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _fail(self, exc: BaseException, what: str) -> SandboxError:
        return SandboxError(f"sandbox {self.id[:12]}: {what} failed: {exc}")

    # ------------------------------------------------------------------ exec
    def _exec_sync(self, argv: list[str], user: str | None, env: dict[str, str]):
        api = self._api
        exec_id = api.exec_create(
            self.id,
            argv,
            stdout=True,
            stderr=True,
            user=user or "",
            environment=env or None,
            workdir=self.workdir,
        )["Id"]
        out, err = api.exec_start(exec_id, demux=True)
        code = api.exec_inspect(exec_id)["ExitCode"]
        return code, out or b"", err or b""

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
        if self._provider._base_url:
            env["DOCKER_HOST"] = self._provider._base_url
        argv = [docker, "exec", "-i", "-w", self.workdir, self.id, "bash", "-c", cmd]
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
    ) -> ExecResult:
        """Run ``cmd`` with ``bash -c`` in the workdir.

        ``timeout`` is enforced inside the container (``timeout -s KILL``, which kills the
        command's whole process group), plus a host-side guard a few seconds later for
        commands whose detached children keep the output open. Never raises for a non-zero
        exit; raises ``SandboxError`` when the container is gone or Docker fails.
        """
        env = dict(env or {})
        argv = ["bash", "-c", cmd]
        if stdin is not None:
            data = stdin.encode() if isinstance(stdin, str) else stdin
            encoded = base64.b64encode(data).decode()
            if len(encoded) <= _STDIN_ENV_MAX:
                # No extra API call: stdin travels base64-encoded in an env var that is
                # unset before the command runs.
                env[_STDIN_ENV] = encoded
                script = f'printf %s "${_STDIN_ENV}" | base64 -d | {{ unset {_STDIN_ENV}; exec bash -c "$1"; }}'
                argv = ["bash", "-c", script, "harness-stdin", cmd]
            else:
                path = f"/tmp/.harness-stdin-{uuid.uuid4().hex}"
                await self.write_file(path, data)
                script = 'exec 0<"$2"; rm -f "$2" 2>/dev/null; exec bash -c "$1"'
                argv = ["bash", "-c", script, "harness-stdin", cmd, path]
        if timeout is not None:
            argv = ["timeout", "-s", "KILL", f"{max(timeout, 0.001):g}", *argv]

        start = time.monotonic()
        fn = functools.partial(self._exec_sync, argv, user, env)
        code: int | None = None
        try:
            # On cancellation (a budget watchdog, Ctrl-C) the call is abandoned: its thread
            # ends when the container is destroyed, which the trial does next.
            if timeout is None:
                code, out, err = await self._provider._run(fn, abandon_on_cancel=True)
            else:
                with anyio.move_on_after(timeout + _HOST_GUARD_S):
                    code, out, err = await self._provider._run(fn, abandon_on_cancel=True)
        except _errors() as exc:
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
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            duration_s=duration,
            timed_out=timed_out,
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
            info = await self._provider._run(self._api.inspect_container, self.id)
        except _errors():
            return False
        return bool(info.get("State", {}).get("Running"))

    # ------------------------------------------------------------------ files
    def _put(self, tar: bytes) -> None:
        if not self._api.put_archive(self.id, "/", tar):
            raise SandboxError(f"sandbox {self.id[:12]}: put_archive refused")

    async def read_file(self, path: str) -> bytes:
        """A file's bytes; ``FileNotFoundError`` when it does not exist."""
        import docker.errors

        target = self._abs(path)

        def read() -> bytes:
            try:
                stream, _stat = self._api.get_archive(self.id, target)
            except docker.errors.NotFound:
                self._api.inspect_container(self.id)  # raises NotFound when the sandbox is gone
                raise FileNotFoundError(target) from None
            data = b"".join(stream)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                member = tar.next()
                if member is None or member.isdir():
                    raise IsADirectoryError(target)
                fh = tar.extractfile(member)
                return fh.read() if fh else b""

        try:
            return await self._provider._run(read)
        except (FileNotFoundError, IsADirectoryError):
            raise
        except _errors() as exc:
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
            await self._provider._run(self._put, buf.getvalue())
        except _errors() as exc:
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
            await self._provider._run(self._put, tar)
        except _errors() as exc:
            raise self._fail(exc, f"copying {src} to {target}") from exc

    # ------------------------------------------------------------------ end of turn
    async def sweep(self) -> int:
        """Kill everything but init and its keeper (see ``docker_sweep``); when that cannot
        run, restart the container (files kept, every process gone). Returns the signals
        sent, -1 after a restart."""
        try:
            return await docker_sweep.sweep(self)
        except SandboxError:
            if not await self._running():
                raise  # the agent (or the platform) ended it: the caller asks why

        def restart() -> None:
            self._api.kill(self.id)
            self._api.wait(self.id, timeout=30)
            self._api.start(self.id)

        try:
            await self._provider._run(restart)
        except _errors() as exc:
            raise self._fail(exc, "restarting after a failed sweep") from exc
        return -1

    async def death_cause(self) -> str | None:
        """Why the container stopped, when the agent did it (the daemon's evidence)."""
        return await self._provider._run(docker_sweep.death_cause, self._api, self.id)

    # ------------------------------------------------------------------ teardown
    async def destroy(self, interrupted: bool = False) -> None:
        """Kill and remove the container (no grace period). Idempotent; never raises:
        a container that cannot be removed is logged and left to ``gc``."""
        if self._destroyed:
            return
        self._destroyed = True
        with anyio.CancelScope(shield=True):
            await self._provider._remove(self.id)


# ----------------------------------------------------------------------------- provider
class DockerOptions(Options):
    """``sandbox_options`` of the ``docker`` backend (all optional)."""

    base_url: str | None = Field(
        None, description="Docker daemon URL; default: DOCKER_HOST or the local socket"
    )
    max_concurrency: int = Field(
        32, ge=1, description="worker threads / HTTP connections for Docker calls"
    )
    pull: bool = Field(True, description="pull a missing `ref` image once during prepare")
    cap_add: list[str] = Field(
        default_factory=list, description="capabilities to give back after dropping ALL"
    )
    api_timeout: float = Field(
        120.0, gt=0, description="seconds for one non-streaming Docker API call"
    )


class DockerProvider(SandboxProvider):
    """Sandboxes as Docker containers; options in ``DockerOptions``.

    Raises ``SandboxError`` naming ``--sandbox local`` when no daemon answers.
    """

    name = "docker"
    isolated = True
    Options = DockerOptions

    def __init__(
        self,
        base_url: str | None = None,
        max_concurrency: int = 32,
        pull: bool = True,
        cap_add: Iterable[str] = (),
        api_timeout: float = 120.0,
    ):
        try:
            self._client = make_client(base_url, api_timeout, max_concurrency)
            self._base_url = base_url
            info = self._client.info()
        except _errors() as exc:
            raise SandboxError(f"no Docker daemon answers ({exc}); {NO_DAEMON_HINT}") from exc
        self._ncpu = float(info.get("NCPU") or 1)
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._pull = pull
        self._cap_add = list(cap_add)
        self._owner = docker_gc.owner_labels()
        self._pinned: dict[str, PinnedImage] = {}
        self._live: set[str] = set()
        self._allowlists: dict[tuple[str, tuple[str, ...]], docker_network.Allowlist] = {}
        """(environment, allowed hosts) -> its egress-restricted network."""
        self._network_lock: anyio.Lock | None = None

    async def _run(self, fn: Callable[..., T], *args: Any, abandon_on_cancel=False) -> T:
        return await anyio.to_thread.run_sync(
            fn, *args, limiter=self._limiter, abandon_on_cancel=abandon_on_cancel
        )

    # ------------------------------------------------------------------ images
    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        """Build or resolve each environment's image ONCE and pin it to its image id.

        Returns environment name -> ``sha256:...``. A broken recipe raises
        ``EnvironmentBuildError`` naming the environment; Docker trouble ``SandboxError``.
        """
        for env in environments:
            if env.name not in self._pinned:
                self._pinned[env.name] = await self._run(
                    docker_images.pin_environment, self._client, env, self._pull
                )
            await self._network_for(env, network_hosts(env))
        return {env.name: self._pinned[env.name].image_id for env in environments}

    async def prepare_networks(self, wanted: Iterable[tuple[Environment, list[str]]]) -> None:
        """Create, before any trial, the allowlist networks of tasks that add hosts of their
        own, so a run whose rules cannot be installed refuses to start."""
        for env, hosts in wanted:
            await self._network_for(env, hosts)

    async def _network_for(self, env: Environment, hosts: list[str]) -> str:
        """The network mode for a sandbox that may reach ``hosts``: ``none`` when there are
        none, else a bridge of its own per distinct (environment, hosts), made once."""
        if not hosts:
            return "none"
        key = (env.name, tuple(hosts))
        if self._network_lock is None:
            self._network_lock = anyio.Lock()
        async with self._network_lock:
            if key not in self._allowlists:
                allow = docker_network.Allowlist(env.name, list(hosts))
                await self._run(allow.create, self._client, self._owner)
                self._allowlists[key] = allow
        return self._allowlists[key].network_name

    async def lock_entries(self, environments: list[Environment]) -> dict[str, dict]:
        """Lock-file entries (image id, recipe image id, base images, files digest) per
        environment name, preparing the environments first. Compare two with ``check_lock``."""
        await self.prepare(environments)
        return {
            env.name: docker_images.lock_entry(env, self._pinned[env.name]) for env in environments
        }

    check_lock = staticmethod(check_lock)

    # ------------------------------------------------------------------ sandboxes
    def _create_kwargs(
        self, request: SandboxRequest, pinned: PinnedImage, network: str
    ) -> dict[str, Any]:
        spec = request.environment.spec
        limits = request.limits
        cpus = min(limits.cpus, self._ncpu)
        labels = {**request.labels, **self._owner, "harness": "1", "harness.environment": spec.name}
        host_config = self._client.api.create_host_config(
            init=True,
            network_mode=network,
            cap_drop=["ALL"],
            cap_add=self._cap_add or None,
            security_opt=["no-new-privileges"],
            pids_limit=limits.pids,
            mem_limit=limits.memory,
            memswap_limit=limits.memory,
            nano_cpus=int(cpus * 1e9),
            mounts=self._socket_mounts(request),
        )
        return dict(
            image=request.image_id or pinned.image_id,
            entrypoint=["sleep", "infinity"],
            command=[],
            name=f"harness-{uuid.uuid4().hex[:12]}",
            hostname="sandbox",
            user=spec.user or "",
            working_dir=spec.workdir,
            environment={"HARNESS_WORKDIR": spec.workdir},
            labels=labels,
            host_config=host_config,
            # Never inject the host's proxy settings (~/.docker/config.json) as env vars.
            use_config_proxy=False,
        )

    @staticmethod
    def _socket_mounts(request: SandboxRequest) -> list | None:
        """No host mounts, except the proxy's socket directory when asked, read-only."""
        if request.socket_dir is None:
            return None
        from docker.types import Mount

        return [Mount(SOCKET_MOUNT, request.socket_dir, type="bind", read_only=True)]

    def _create_sync(self, kwargs: dict[str, Any]) -> str:
        # Low-level calls: create + start, no extra inspect round trip.
        cid = self._client.api.create_container(**kwargs)["Id"]
        self._live.add(cid)
        self._client.api.start(cid)
        return cid

    async def create(self, request: SandboxRequest) -> DockerSandbox:
        """A NEW container from the pinned image id, started and ready for ``exec``."""
        env = request.environment
        if env.name not in self._pinned:
            await self.prepare([env])
        pinned = self._pinned[env.name]
        hosts = request.network if request.network is not None else network_hosts(env)
        kwargs = self._create_kwargs(request, pinned, await self._network_for(env, hosts))
        try:
            cid = await self._run(self._create_sync, kwargs)
        except _errors() as exc:
            # A half-created container is found by its unique name and removed.
            with anyio.CancelScope(shield=True):
                await self._remove(kwargs["name"])
            raise SandboxError(
                f"creating a sandbox for environment '{env.name}' failed: {exc}"
            ) from exc
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._remove(kwargs["name"])
            raise
        return DockerSandbox(self, cid, pinned, env.spec.workdir, request.socket_dir)

    async def _remove(self, container: str) -> None:
        import docker.errors

        def remove() -> None:
            try:
                self._client.api.remove_container(container, force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: removal already in progress
                    raise

        try:
            await self._run(remove)
        except _errors() as exc:
            log.warning("could not remove container %s (left to gc): %s", container[:12], exc)
        else:
            self._live.discard(container)

    async def healthy(self) -> bool:
        """Does the daemon answer? (The circuit breaker's probe while Docker is down.)"""
        try:
            return bool(await self._run(self._client.ping))
        except Exception:
            return False

    async def close(self) -> None:
        """Remove any sandbox this provider created and not yet destroyed; close the client."""
        with anyio.CancelScope(shield=True):
            for cid in list(self._live):
                await self._remove(cid)
            for allow in self._allowlists.values():
                await self._run(allow.remove, self._client)
            self._allowlists.clear()
        self._client.close()

    def gc(self, running_run_ids: Iterable[str] | None = None) -> list[str]:
        """Synchronous: remove leftover harness containers (see ``docker_gc``)."""
        return docker_gc.gc(self._client, running_run_ids)

    def pinned_images(self) -> dict[str, PinnedImage]:
        """The images this provider pinned, per environment (worker nodes adopt them)."""
        return dict(self._pinned)

    async def adopt_images(self, pinned: dict[str, Any], fetch: ImageFetch | None) -> None:
        """Use the driver's pinned images on this node, after checking the daemon has each
        id; an image it lacks is loaded from ``fetch(image_id)`` and its id checked."""
        import socket

        import docker.errors

        host = socket.gethostname()
        for name, image in pinned.items():
            try:
                await anyio.to_thread.run_sync(self._client.images.get, image.image_id)
            except docker.errors.ImageNotFound:
                if fetch is None:
                    raise SandboxError(
                        f"node {host} has no image {image.image_id[:19]} pinned for "
                        f"environment '{name}': give worker nodes the driver's images (docker "
                        "save | docker load, or a registry pull by digest), or leave "
                        "executor_options.ship_images on"
                    ) from None
                await anyio.to_thread.run_sync(self._load, fetch, image.image_id)
            except docker.errors.DockerException as exc:
                raise SandboxError(f"node {host}: {exc}") from exc
            self._pinned[name] = image

    def _load(self, fetch: ImageFetch, image_id: str) -> None:
        import socket

        log.info("node %s: loading image %s from the driver", socket.gethostname(), image_id[:19])
        try:
            docker_images.import_image(self._client, fetch(image_id), image_id)
        except Exception as exc:
            raise SandboxError(
                f"node {socket.gethostname()}: shipping image {image_id[:19]} failed: {exc}"
            ) from exc


def gc(client=None, running_run_ids: Iterable[str] | None = None) -> list[str]:
    """Remove leftover ``harness=1`` containers; rule in :mod:`harness.sandbox.docker_gc`."""
    return docker_gc.gc(client, running_run_ids)


def lock_entries(environments: list[Environment], **options: Any) -> dict[str, dict]:
    """Synchronous convenience for ``harness lock``: build/resolve, then return the entries."""

    async def main() -> dict[str, dict]:
        provider = DockerProvider(**options)
        try:
            return await provider.lock_entries(environments)
        finally:
            await provider.close()

    return anyio.run(main)


__all__ = [
    "DockerOptions",
    "DockerProvider",
    "DockerSandbox",
    "EnvironmentBuildError",
    "check_lock",
    "docker_available",
    "gc",
    "lock_entries",
]
