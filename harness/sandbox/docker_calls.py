"""Every call to the Docker daemon, with a time limit: the one place waits on Docker end.

docker-py blocks, so each call runs in a daemon thread of its own (at most
``max_concurrency`` at once) and is waited for at most the limit of its kind (``LIMITS``, seconds). A call still
running at its limit is abandoned: its thread ends on its own when the daemon answers or
docker-py's socket timeout (``api_timeout``) fires, and ``DaemonTimeout`` (a
``SandboxError``: infrastructure, so the trial is retried) is raised at once. A container
one of whose calls timed out is *unresponsive*: every later call about it fails at once,
except its removal, which is tried within the removal limit and, when that passes too, is
abandoned and left for ``harness gc`` (logged). So a daemon that stops answering for one
container costs its trial at most one limit per lifecycle step, and a run's end (teardown,
provider close) at most ``REMOVE`` plus ``NETWORK`` seconds.

Image builds and pulls (``build``) have no limit of their own: a build may rightly take
long; the socket timeout still ends one whose daemon falls silent.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from harness.errors import SandboxError

T = TypeVar("T")

LIMITS: dict[str, float | None] = {
    "ping": 10.0,  # is the daemon there (the circuit breaker's probe, start-up)
    "inspect": 30.0,  # a container's state, its death evidence, an image's presence
    "create": 120.0,  # create and start one container
    "exec": 30.0,  # create or inspect an exec (running it is bounded by its command's timeout)
    "files": 120.0,  # copy files in or out (tar archives)
    "stop": 30.0,  # kill a container and wait for it to stop
    "restart": 60.0,  # kill, wait for and start a container again (after a failed sweep)
    "remove": 30.0,  # force-remove a container
    "network": 60.0,  # create or remove a network (allowlist, open, services) or a volume
    "build": None,  # build, pull, load or tag an image
}
"""Seconds each kind of daemon call may take (``None``: no limit of its own)."""
REMOVE = LIMITS["remove"]
NETWORK = LIMITS["network"]


class DaemonTimeout(SandboxError):
    """The Docker daemon did not answer a call within its limit (the call was abandoned)."""


class DaemonCalls:
    """Runs docker-py calls in threads, each bounded by the limit of its kind."""

    def __init__(self, max_concurrency: int, limits: dict[str, float | None] | None = None):
        self.limiter = anyio.CapacityLimiter(max_concurrency)
        self.limits = {**LIMITS, **(limits or {})}
        self.unresponsive: set[str] = set()
        """Containers the daemon stopped answering for."""

    async def __call__(
        self,
        kind: str,
        fn: Callable[..., T],
        *args: Any,
        container: str | None = None,
        limit: float | None = -1.0,
        late_is_stuck: bool = True,
    ) -> T:
        """``fn(*args)`` in a worker thread, waited for at most ``limit`` seconds (default:
        the limit of ``kind``; ``None``: none). About ``container`` (an id or a name) when
        given: a late call marks it unresponsive unless ``late_is_stuck`` is false (a
        command that may rightly outlive its limit). Cancellation abandons the thread too.

        Raises ``DaemonTimeout`` when the limit passes or the container is unresponsive.
        """
        if container is not None and container in self.unresponsive and kind != "remove":
            raise DaemonTimeout(
                f"the Docker daemon stopped answering for container {container[:12]}; "
                f"{kind} not tried"
            )
        bound = self.limits[kind] if limit == -1.0 else limit
        with anyio.move_on_after(bound):
            async with self.limiter:
                return await _in_daemon_thread(fn, *args)
        if container is not None and late_is_stuck:
            self.unresponsive.add(container)
        about = f" for container {container[:12]}" if container else ""
        raise DaemonTimeout(f"the Docker daemon did not answer {kind}{about} within {bound:g} s")


async def _in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a daemon thread of its own; cancelling the wait abandons the thread.

    Not anyio's worker threads: the interpreter waits for those at exit, so one stuck in a
    read from a silent daemon would hold the process for docker-py's socket timeout after
    the run has ended (or after a second Ctrl-C)."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task
            outcome.append((False, exc))
        finally:
            with contextlib.suppress(Exception):  # the loop may be gone: nobody waits
                anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=target, name="docker-call", daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def docker_errors():
    """What the Docker SDK raises when the daemon or the container fails: infrastructure."""
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


@dataclass(frozen=True)
class ContainerDaemon:
    """What a container (``docker_container.DockerSandbox``) needs of its provider, and
    nothing else: it never reaches into the provider's members."""

    api: Any
    """The daemon's low-level API (docker-py's ``APIClient``)."""
    base_url: str | None
    """The daemon's address as the suite gave it (None: the environment's default)."""
    calls: DaemonCalls
    """Every call to the daemon, within the limit of its kind (shared by the provider)."""
    remove: Callable[[str], Awaitable[None]]
    """The provider's forced removal of a container (it keeps the run's bookkeeping)."""


__all__ = [
    "LIMITS",
    "NETWORK",
    "REMOVE",
    "ContainerDaemon",
    "DaemonCalls",
    "DaemonTimeout",
    "docker_errors",
]
