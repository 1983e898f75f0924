"""The ``docker`` backend: one fresh, hardened container per trial attempt.

Images are built or resolved once per run and pinned to immutable ids
(:mod:`harness.sandbox.docker_images`); each sandbox is a NEW container created from the
pinned id (never a tag), never reused across trials, and force-removed when the attempt ends.
A trial of a ready-made agent (Claude Code, Codex CLI) starts instead from an image built at
the same time from the pinned id plus that CLI's executable
(:mod:`harness.sandbox.docker_agent_images`).

Hardening of every container (defaults, see ``DockerProvider``):

* no network (``network_mode=none``) unless the environment (or the task) lists hosts in
  ``network``: then a bridge of its own whose egress reaches only those hosts
  (``docker_network``: iptables rules in ``DOCKER-USER``; the run refuses to start when
  they cannot be installed); a task with ``internet: true`` (allowed by the suite) gets the
  run's open-egress bridge, where containers cannot reach each other. A grading sandbox
  gets no network unless the task's ``grading`` block gives it hosts or open egress; an
  agent's container may change policy between phases (``docker_phase_network``).
* all capabilities dropped, ``no-new-privileges``, Docker's default seccomp profile (a
  grading sandbox with ``grading.root`` keeps Docker's default capabilities for its grader);
* memory (swap included), PID and CPU limits from the suite's ``limits``;
* Docker's init as PID 1 (reaps zombies) running ``sleep infinity``: the image's own
  entrypoint and command are ignored, so images need ``sleep`` (coreutils) and ``bash``;
* the environment's ``user`` as the default user of every command (non-root when declared);
* no host mounts (one exception: a ``command`` agent running its program inside the
  sandbox against the metering proxy gets the proxy's socket directory, read-only, at
  ``/run/harness``; see ``harness.sandbox.relay``), and no host environment variables:
  only the image's ``ENV`` and ``HARNESS_WORKDIR``.

All Docker SDK calls go through ``docker_calls.DaemonCalls``: worker threads bounded by one
``CapacityLimiter``, one client whose connection pool matches that limit, and a time limit
per kind of call, so a daemon that stops answering (for one container or at all) costs a
bounded wait and an infrastructure error, never a run that hangs.
Docker API failures raise ``SandboxError`` (infrastructure: retried); broken recipes raise
``EnvironmentBuildError`` (never retried).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from pydantic import Field

from harness.config.models import Options
from harness.errors import EnvironmentBuildError, SandboxError
from harness.sandbox import docker_agent_images, docker_gc, docker_images, docker_network
from harness.sandbox.base import (
    AgentBuild,
    BackendOptions,
    Environment,
    ImageFetch,
    SandboxProvider,
    SandboxRequest,
    network_hosts,
)
from harness.sandbox.docker_calls import ContainerDaemon, DaemonCalls, DaemonTimeout
from harness.sandbox.docker_client import NO_DAEMON_HINT, docker_available, make_client
from harness.sandbox.docker_container import DockerSandbox, docker_errors
from harness.sandbox.docker_images import PinnedImage
from harness.sandbox.docker_mounts import host_mounts
from harness.sandbox.docker_phase_network import PhaseNetwork
from harness.sandbox.docker_preflight import check_base_images
from harness.sandbox.docker_quota import Quotas, TrialDisk
from harness.sandbox.docker_services import Fleet, service_environments
from harness.sandbox.lock_compare import check_lock

log = logging.getLogger(__name__)

T = TypeVar("T")


def agent_user(declared: str | None, pinned: PinnedImage) -> str:
    """The user agent commands run as: the environment's, else the unprivileged uid the
    image's workdir was baked for (``docker_images``: 1000; ``root`` only when declared)."""
    if declared and declared not in ("root", "0", "0:0"):
        return declared
    return f"{pinned.uid}:{pinned.gid}"


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
    mounts_sockets = True
    Options = DockerOptions

    @classmethod
    def honours(cls, options: BackendOptions) -> frozenset[str]:
        """Every network policy (``docker_network``), switched between phases on a running
        container (``docker_phase_network``), and root graders (Docker's defaults)."""
        modes = {"none", "allowlist", "open", "switch-network", "grader-root", "services"}
        return frozenset({*modes, "grader-anywhere"})

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
        except docker_errors() as exc:
            raise SandboxError(f"no Docker daemon answers ({exc}); {NO_DAEMON_HINT}") from exc
        self._ncpu = float(info.get("NCPU") or 1)
        self.calls = DaemonCalls(max_concurrency)
        self._daemon = ContainerDaemon(self._client.api, base_url, self.calls, self._remove)
        """What each container gets of this provider."""
        self._pull = pull
        self._cap_add = list(cap_add)
        self._owner = docker_gc.owner_labels()
        self._pinned: dict[str, PinnedImage] = {}
        self._live: set[str] = set()
        self._abandoned: set[str] = set()
        """Containers whose removal did not finish within its limit: left for ``harness gc``."""
        self._allowlists: dict[tuple[str, tuple[str, ...]], docker_network.Allowlist] = {}
        """(environment, allowed hosts) -> its egress-restricted network."""
        self._open: docker_network.OpenNetwork | None = None
        """The run's open-egress bridge (made when a sandbox first asks for it)."""
        self._network_lock: anyio.Lock | None = None
        self._agent_lock: anyio.Lock | None = None
        self._quotas = Quotas(self._client.api, self._run, docker_errors())  # docker_quota
        self._services = Fleet(self._run, self._client, self._owner, pull)  # docker_services

    async def _run(
        self,
        kind: str,
        fn: Callable[..., T],
        *args: Any,
        container: str | None = None,
        limit: float | None = -1.0,
        late_is_stuck: bool = True,
    ) -> T:
        """``fn(*args)`` against the daemon, within the limit of ``kind`` (``DaemonCalls``)."""
        return await self.calls(
            kind, fn, *args, container=container, limit=limit, late_is_stuck=late_is_stuck
        )

    # ------------------------------------------------------------------ images
    async def prepare(self, environments: list[Environment]) -> dict[str, str | None]:
        """Build or resolve each environment's image ONCE and pin it to its image id, after
        checking every base image is here (``docker_preflight``). Returns environment name
        -> ``sha256:...``. A broken recipe or a missing image raises
        ``EnvironmentBuildError`` naming the environment; Docker trouble ``SandboxError``."""
        todo = [env for env in environments if env.name not in self._pinned]
        everything = [*todo, *service_environments(todo)]
        await self._run("build", check_base_images, self._client, everything, self._pull)
        for env in environments:
            if env.name not in self._pinned:
                self._pinned[env.name] = await self._run(
                    "build", docker_images.pin_environment, self._client, env, self._pull
                )
            await self._network_for(env, network_hosts(env))
        await self._services.prepare(environments)
        return {env.name: self._pinned[env.name].image_id for env in environments}

    async def prepare_agents(
        self, wanted: list[tuple[Environment, AgentBuild]]
    ) -> dict[str, dict[str, str]]:
        """Build (or reuse) ONCE per (environment, agent CLI) the environment's pinned image
        plus that CLI's executable, and pin it beside the task image.

        Returns environment -> ``AgentBuild.key`` -> image id. A CLI that cannot be fetched
        or built raises ``EnvironmentBuildError``; Docker trouble ``SandboxError``."""
        if self._agent_lock is None:
            self._agent_lock = anyio.Lock()
        out: dict[str, dict[str, str]] = {}
        for env, build in wanted:
            if env.name not in self._pinned:
                await self.prepare([env])
            async with self._agent_lock:
                pinned = self._pinned[env.name]
                if build.key not in pinned.agents:
                    image_id = await self._run(
                        "build",
                        docker_agent_images.bake_agent,
                        self._client,
                        env.name,
                        pinned.image_id,
                        build,
                    )
                    agents = {**pinned.agents, build.key: {"npm": build.spec, "image_id": image_id}}
                    self._pinned[env.name] = dataclasses.replace(pinned, agents=agents)
            out.setdefault(env.name, {})[build.key] = self._pinned[env.name].agents[build.key][
                "image_id"
            ]
        return out

    async def prepare_networks(self, wanted: Iterable[tuple[Environment, list[str]]]) -> None:
        """Create, before any trial, the allowlist networks of tasks that add hosts of their
        own, so a run whose rules cannot be installed refuses to start."""
        for env, hosts in wanted:
            await self._network_for(env, hosts)

    async def _network_for(self, env: Environment, hosts: list[str], internet=False) -> str:
        """The network mode for a sandbox that may reach ``hosts``: ``none`` when there are
        none, else a bridge of its own per distinct (environment, hosts), made once; with
        ``internet``, the run's open-egress bridge."""
        if not hosts and not internet:
            return "none"
        if self._network_lock is None:
            self._network_lock = anyio.Lock()
        if internet:
            async with self._network_lock:
                if self._open is None:
                    opened = docker_network.OpenNetwork()
                    await self._run("network", opened.create, self._client, self._owner)
                    self._open = opened
            return self._open.network_name
        key = (env.name, tuple(hosts))
        async with self._network_lock:
            if key not in self._allowlists:
                allow = docker_network.Allowlist(env.name, list(hosts))
                await self._run("network", allow.create, self._client, self._owner)
                self._allowlists[key] = allow
        return self._allowlists[key].network_name

    async def lock_entries(self, environments: list[Environment]) -> dict[str, dict]:
        """Lock-file entries (image id, recipe image id, base images, files digest, and the
        agent CLIs prepared so far) per environment name, preparing the environments first.
        Compare two with ``check_lock``."""
        await self.prepare(environments)
        return {
            env.name: docker_images.lock_entry(env, self._pinned[env.name])
            | ({"services": self._services.lock(env)} if env.spec.services else {})
            for env in environments
        }

    check_lock = staticmethod(check_lock)

    # ------------------------------------------------------------------ sandboxes
    def _create_kwargs(
        self, request: SandboxRequest, image_id: str, network: str, disk: TrialDisk | None
    ) -> dict[str, Any]:
        spec = request.environment.spec
        pinned = self._pinned[spec.name]
        limits = request.limits
        cpus = min(limits.cpus, self._ncpu)
        labels = {**request.labels, **self._owner, "harness": "1", "harness.environment": spec.name}
        # The grader (and an agent's sandbox its task grades in place) may drop to the
        # unprivileged user; no process of that user can ever use these (no-new-privileges).
        drop_caps = ["SETUID", "SETGID"] if request.grading or request.in_place else []
        # A grader that installs its test tools keeps Docker's default capabilities; the
        # agent's sandbox never does.
        root_grader = request.grading and request.grader_root
        host_config = self._client.api.create_host_config(
            init=True,
            network_mode=network,
            cap_drop=None if root_grader else ["ALL"],
            cap_add=None if root_grader else [*self._cap_add, *drop_caps] or None,
            security_opt=["no-new-privileges"],
            pids_limit=limits.pids,
            mem_limit=limits.memory,
            memswap_limit=limits.memory,
            nano_cpus=int(cpus * 1e9),
            **host_mounts(request, disk),
        )
        return dict(
            image=image_id,
            entrypoint=["sleep", "infinity"],
            command=[],
            name=f"harness-{uuid.uuid4().hex[:12]}",
            hostname="sandbox",
            # A task graded in place: its container's processes are root's, so that the
            # grader's exec holds CAP_SETUID/CAP_SETGID (an exec as root in a container of
            # uid 1000 holds no capability, and as-agent could not drop); the agent's
            # commands still run as its own user (``only_user``), with none.
            user="0:0" if request.grading or request.in_place else agent_user(spec.user, pinned),
            working_dir=spec.workdir,
            environment={"HARNESS_WORKDIR": spec.workdir},
            labels=labels,
            host_config=host_config,
            # Never inject the host's proxy settings (~/.docker/config.json) as env vars.
            use_config_proxy=False,
        )

    def _create_sync(self, kwargs: dict[str, Any], also: str | None = None) -> str:
        # Low-level calls: create (on network ``also`` too) + start, no inspect round trip.
        cid = self._client.api.create_container(**kwargs)["Id"]
        self._live.add(cid)
        if also is not None:
            self._client.api.connect_container_to_network(cid, also)
        self._client.api.start(cid)
        return cid

    async def create(self, request: SandboxRequest) -> DockerSandbox:
        """A NEW container from the pinned image id, started and ready for ``exec``."""
        env = request.environment
        if env.name not in self._pinned:
            await self.prepare([env])
        image_id = request.image_id or self._pinned[env.name].image_id
        agent_path = None
        if request.agent is not None and not request.grading:  # the task image plus the arm's CLI
            built = await self.prepare_agents([(env, request.agent)])
            image_id, agent_path = built[env.name][request.agent.key], request.agent.path
        pinned = self._pinned[env.name]
        if request.network is not None:
            hosts = request.network
        else:  # a grading sandbox reaches nothing unless its request says so
            hosts = [] if request.grading else network_hosts(env)
        network = await self._network_for(env, hosts, request.internet)
        disk = await self._quotas.disk(env, pinned.image_id, request.limits.disk)
        kwargs = self._create_kwargs(request, image_id, network, disk)
        self._quotas.keep(kwargs["name"], disk)
        try:
            beside = None
            if not request.grading:  # the attempt's services, beside the agent's container
                beside = await self._services.start(env, request, kwargs["name"])
            also = beside.join(kwargs, env) if beside is not None else None
            cid = await self._run(
                "create", self._create_sync, kwargs, also, container=kwargs["name"]
            )
        except docker_errors() as exc:
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
        self._quotas.rename(kwargs["name"], cid)
        self._services.rename(kwargs["name"], cid)
        box = self._services.sandbox(  # with services: one that takes their files out
            self._daemon, cid, pinned, env.spec.workdir, request.socket_dir, image_id, agent_path
        )
        if not request.grading:
            box.only_user = agent_user(env.spec.user, pinned)
            nets = functools.partial(self._network_for, env)
            box.net = PhaseNetwork(cid, self._client.api, self.calls, nets, network, beside is None)
        return box

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
            await self._run("remove", remove, container=container)
        except DaemonTimeout as exc:
            self._abandoned.add(container)
            log.warning("%s: abandoned, `harness gc` removes it later", exc)
        except docker_errors() as exc:
            log.warning("could not remove container %s (left to gc): %s", container[:12], exc)
        else:
            self._live.discard(container)
        await self._quotas.release(container)
        await self._services.release(container)

    async def healthy(self) -> bool:
        """Does the daemon answer? (The circuit breaker's probe while Docker is down.)"""
        try:
            return bool(await self._run("ping", self._client.ping))
        except Exception:
            return False

    async def close(self) -> None:
        """Remove any sandbox this provider created and not yet destroyed, and the networks;
        close the client. Bounded: at most ``REMOVE`` seconds for the containers (removed
        side by side; one whose removal was abandoned before is not tried again) plus
        ``NETWORK`` per network. What could not be removed is logged for ``harness gc``."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for cid in self._live - self._abandoned:
                    tg.start_soon(self._remove, cid)
            await self._services.close()
            nets: list[docker_network.Allowlist | docker_network.OpenNetwork]
            nets = [*self._allowlists.values(), *([self._open] if self._open else [])]
            for net in nets:
                try:
                    await self._run("network", net.remove, self._client)
                except (DaemonTimeout, *docker_errors()) as exc:
                    log.warning("network %s left for `harness gc`: %s", net.network_name, exc)
            self._allowlists.clear()
            self._open = None
            await self._quotas.close()
        if self._abandoned:
            log.warning(
                "%d sandbox(es) could not be removed in time (%s); `harness gc` removes them",
                len(self._abandoned),
                ", ".join(sorted(c[:12] for c in self._abandoned)),
            )
        self._client.close()

    def gc(self, running_run_ids: Iterable[str] | None = None) -> list[str]:
        """Synchronous: remove leftover harness containers and quota dirs (``docker_gc``)."""
        return docker_gc.gc(self._client, running_run_ids) + Quotas.gc()

    def pinned_images(self) -> dict[str, PinnedImage]:
        """The images this provider pinned, per environment, each with the agent-CLI images
        built on it (worker nodes adopt them all)."""
        return dict(self._pinned)

    async def adopt_images(self, pinned: dict[str, Any], fetch: ImageFetch | None) -> None:
        """Use the driver's pinned images (agent-CLI images included) on this node, after
        checking the daemon has each id; an image it lacks is loaded from ``fetch(image_id)``
        and its id checked."""
        import socket

        import docker.errors

        host = socket.gethostname()
        for name, image in pinned.items():
            for image_id in image.all_image_ids():
                try:
                    await self._run("inspect", self._client.images.get, image_id)
                except docker.errors.ImageNotFound:
                    if fetch is None:
                        raise SandboxError(
                            f"node {host} has no image {image_id[:19]} pinned for "
                            f"environment '{name}': give worker nodes the driver's images "
                            "(docker save | docker load, or a registry pull by digest), or "
                            "leave executor_options.ship_images on"
                        ) from None
                    await self._run("build", self._load, fetch, image_id)
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
