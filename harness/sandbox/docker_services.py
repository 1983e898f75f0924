"""Services beside a trial's sandbox on Docker: an environment's ``services`` (a database,
a web app) started fresh for every trial attempt.

Per attempt: one internal bridge network of the trial's own (containers on it reach each
other by service name; nothing on it reaches anything else: Docker gives an internal
network no gateway), one tmpfs volume per shared ``volumes`` entry, and one container per
service from its pinned image, started in dependency order, each waited for until Docker's
healthcheck says healthy before the next starts; the agent's container starts last, on the
same network. Everything carries the run's and the owner's labels, is removed with the
agent's container, and is known to ``harness gc`` when its owner died.

Services run no code of the agent's: it reaches them over the trial's network only. They
keep Docker's default capabilities (a database's entrypoint changes users) with
``no-new-privileges`` and the suite's memory, CPU and PID limits.

Images: each service is pinned once per run like an environment's image (built with its
``context`` as the build context, or resolved from ``ref``; never baked: nothing of the
harness goes into a service), checked by the offline preflight, and recorded in the lock
under its environment's entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from harness.config.environment import EnvironmentSpec, service_order
from harness.config.models import Limits
from harness.errors import SandboxError
from harness.sandbox.base import Environment, SandboxRequest
from harness.sandbox.docker_container import DockerSandbox
from harness.sandbox.docker_images import (
    PinnedImage,
    base_images,
    build_dockerfile,
    lock_entry,
    resolve_ref,
)
from harness.sandbox.docker_network import close_to_host, remove_rules_for
from harness.sandbox.docker_service_files import ServicedSandbox

VOLUME_OPTIONS = {"type": "tmpfs", "device": "tmpfs", "o": "size=64m,mode=1777"}
"""A shared volume: memory, bounded, empty, writable by every user (sticky)."""
ROLE_LABEL = "harness.role"

Run = Callable[..., Awaitable[Any]]
"""``DockerProvider._run``: one daemon call within the limit of its kind."""


def service_environment(env: Environment, name: str) -> Environment:
    """The image recipe of one service, as an environment (the preflight, pinning and lock
    read environments): named ``<environment>--<service>``, rooted at its build context."""
    service = env.spec.services[name]
    spec = EnvironmentSpec(
        name=f"{env.name}--{name}",
        description=f"service '{name}' of environment '{env.name}'",
        version=env.spec.version,
        image=service.image,
        workdir="/",
    )
    return Environment(spec, env.root / service.context)


def service_environments(envs: list[Environment]) -> list[Environment]:
    """Every service of these environments, as environments."""
    return [service_environment(env, name) for env in envs for name in env.spec.services]


def pin_service(client, env: Environment, pull: bool) -> PinnedImage:
    """Build or resolve a service's image once; its id is what every trial starts."""
    if env.spec.image.dockerfile:
        image_id = build_dockerfile(client, env)
    else:
        image_id = resolve_ref(client, env, pull)
    bases = base_images(client, env)
    return PinnedImage(env.name, image_id, image_id, base_images=bases)


def lock_services(env: Environment, pinned: dict[str, PinnedImage]) -> dict[str, Any]:
    """The lock entries of an environment's services (service name -> entry)."""
    return {
        name: lock_entry(svc, pinned[svc.name])
        for name, svc in ((n, service_environment(env, n)) for n in env.spec.services)
    }


@dataclass
class TrialServices:
    """What one attempt's services are made of, removed together (``remove``)."""

    network: str
    bridge: str = ""
    """The network's host interface, closed to the host itself (``close_to_host``)."""
    volumes: dict[str, str] = field(default_factory=dict)
    """shared volume name -> the Docker volume of this attempt"""
    containers: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """service name -> its container (``docker_service_files`` takes files out of it)"""

    def mounts(self, wanted: dict[str, str]) -> list[Any]:
        """Docker mounts of the shared volumes ``wanted`` (name -> path)."""
        from docker.types import Mount

        return [Mount(path, self.volumes[name], type="volume") for name, path in wanted.items()]

    def join(self, kwargs: dict[str, Any], env: Environment) -> str | None:
        """Put the agent's container (its create arguments) beside the services: the
        shared volumes mounted, on their network. Returns a network to connect it to as
        well when it has one of its own (an allowlist, open egress), else None."""
        host = kwargs["host_config"]
        if mounts := self.mounts(env.spec.volumes):
            host["Mounts"] = [*(host.get("Mounts") or []), *mounts]
        if host.get("NetworkMode") == "none":
            host["NetworkMode"] = self.network
            return None
        return self.network


def _labels(labels: dict[str, str], role: str) -> dict[str, str]:
    return {**labels, "harness": "1", ROLE_LABEL: role}


async def start_services(
    run: Run, client, env: Environment, pinned: dict[str, PinnedImage], labels: dict[str, str],
    limits: Limits,
) -> TrialServices:  # fmt: skip
    """Create the attempt's network and volumes and start its services, each healthy
    before the next starts. On any failure what was made is removed and the error raised
    (``SandboxError``: infrastructure, retried)."""
    tag = uuid.uuid4().hex[:12]
    made = TrialServices(network=f"harness-svc-{tag}")
    try:
        await run(
            "network",
            lambda: client.api.create_network(
                made.network,
                driver="bridge",
                internal=True,
                labels=_labels(labels, "services"),
                options={"com.docker.network.bridge.name": f"hs{tag}"},
            ),
        )
        made.bridge = f"hs{tag}"
        await run("network", close_to_host, made.bridge)
        for name in env.spec.volumes:
            volume = f"harness-vol-{tag}-{name}"
            await run(
                "network",
                lambda v=volume: client.api.create_volume(
                    v, driver="local", driver_opts=VOLUME_OPTIONS, labels=_labels(labels, "volume")
                ),
            )
            made.volumes[name] = volume
        for name in service_order(env.spec.services):
            image = pinned[f"{env.name}--{name}"].image_id
            cid = await run(
                "create", _start_one, client, env, name, image, made, labels, limits, tag
            )
            await _healthy(run, client, env, name, cid)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await remove_services(run, client, made)
        raise
    return made


def _start_one(
    client, env: Environment, name: str, image: str, made: TrialServices,
    labels: dict[str, str], limits: Limits, tag: str,
) -> str:  # fmt: skip
    service = env.spec.services[name]
    health = service.healthcheck
    host_config = client.api.create_host_config(
        init=True,
        network_mode=made.network,
        security_opt=["no-new-privileges"],
        pids_limit=limits.pids,
        mem_limit=limits.memory,
        memswap_limit=limits.memory,
        mounts=made.mounts(service.volumes) or None,
    )
    networking = client.api.create_networking_config(
        {made.network: client.api.create_endpoint_config(aliases=[name])}
    )
    kwargs: dict[str, Any] = dict(
        image=image,
        name=f"harness-svc-{tag}-{name}",
        hostname=name,
        environment=dict(service.env),
        labels={**_labels(labels, "service"), "harness.service": name},
        host_config=host_config,
        networking_config=networking,
        use_config_proxy=False,
    )
    if service.command is not None:
        kwargs["command"] = service.command
    if health is not None:
        kwargs["healthcheck"] = {
            "test": ["CMD", *health.command],
            "interval": int(health.interval_s * 1e9),
            "timeout": int(health.timeout_s * 1e9),
            "retries": health.retries,
            "start_period": int(health.start_period_s * 1e9),
        }
    cid = client.api.create_container(**kwargs)["Id"]
    made.containers.append(cid)  # removed with the rest even if starting it fails
    made.names[name] = cid
    client.api.start(cid)
    return cid


async def _healthy(run: Run, client, env: Environment, name: str, cid: str) -> None:
    """Wait until the service is healthy (no healthcheck: running)."""
    health = env.spec.services[name].healthcheck
    while True:
        state = (await run("inspect", client.api.inspect_container, cid))["State"]
        if not state.get("Running"):
            raise SandboxError(
                f"service '{name}' of environment '{env.name}' exited "
                f"(status {state.get('ExitCode')}) before the agent started"
            )
        if health is None:
            return
        status = (state.get("Health") or {}).get("Status")
        if status == "healthy":
            return
        if status == "unhealthy":
            log = (state.get("Health") or {}).get("Log") or [{}]
            said = str(log[-1].get("Output") or "").strip().splitlines()[-1:] or [""]
            raise SandboxError(
                f"service '{name}' of environment '{env.name}' is unhealthy after "
                f"{health.retries} failed checks: {said[0][:200]}"
            )
        await anyio.sleep(min(health.interval_s, 0.5))


async def remove_services(run: Run, client, made: TrialServices) -> list[str]:
    """Remove the attempt's containers, volumes and network; return what could not be
    removed (left for ``harness gc``). Never raises."""
    left: list[str] = []

    async def attempt(kind: str, what: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            await run(kind, fn, *args)
        except Exception as exc:
            if "No such" not in str(exc) and "not found" not in str(exc):
                left.append(what)

    async with anyio.create_task_group() as tg:
        for cid in made.containers:
            tg.start_soon(attempt, "remove", cid[:12], _remove_container, client, cid)
    for volume in made.volumes.values():
        await attempt("remove", volume, client.api.remove_volume, volume, True)
    await attempt("network", made.network, client.api.remove_network, made.network)
    if made.bridge:
        await attempt("network", made.bridge, remove_rules_for, made.bridge)
    return left


def _remove_container(client, cid: str) -> None:
    client.api.remove_container(cid, force=True, v=True)


class Fleet:
    """A provider's services: their pinned images and each live attempt's services, keyed
    by the agent container they stand beside."""

    def __init__(self, run: Run, client, owner: dict[str, str], pull: bool):
        self._run, self._client, self._owner, self._pull = run, client, owner, pull
        self.pinned: dict[str, PinnedImage] = {}
        self._live: dict[str, TrialServices] = {}
        """agent container name or id -> its attempt's services"""
        self.left: list[str] = []
        """What could not be removed in time: ``harness gc`` removes it later."""

    async def prepare(self, envs: list[Environment]) -> None:
        for svc in service_environments(envs):
            if svc.name not in self.pinned:
                self.pinned[svc.name] = await self._run(
                    "build", pin_service, self._client, svc, self._pull
                )

    def lock(self, env: Environment) -> dict[str, Any]:
        return lock_services(env, self.pinned)

    async def start(
        self, env: Environment, request: SandboxRequest, container: str
    ) -> TrialServices | None:
        """The services of the attempt whose agent container will be ``container``."""
        if not env.spec.services and not env.spec.volumes:
            return None
        await self.prepare([env])
        labels = {**request.labels, **self._owner}
        made = await start_services(
            self._run, self._client, env, self.pinned, labels, request.limits
        )
        self._live[container] = made
        return made

    def sandbox(self, daemon, cid: str, *args: Any) -> DockerSandbox:
        """The agent's container ``cid`` as a sandbox; beside services, one that can take
        their files out for grading (``docker_service_files``)."""
        made = self._live.get(cid)
        if made is None:
            return DockerSandbox(daemon, cid, *args)
        box = ServicedSandbox(daemon, cid, *args)
        box.services = made.names
        return box

    def rename(self, name: str, cid: str) -> None:
        if name in self._live:
            self._live[cid] = self._live.pop(name)

    async def release(self, container: str) -> None:
        """Remove the services beside ``container`` (after it is gone)."""
        made = self._live.pop(container, None)
        if made is not None:
            self.left += await remove_services(self._run, self._client, made)

    async def close(self) -> None:
        for container in list(self._live):
            await self.release(container)


__all__ = [
    "Fleet",
    "TrialServices",
    "lock_services",
    "pin_service",
    "remove_services",
    "service_environment",
    "service_environments",
    "start_services",
]
