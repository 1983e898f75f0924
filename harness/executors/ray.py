"""The ``ray`` executor: each trial runs as a Ray task on a cluster node, its record comes back.

Driver side (``RayExecutor``): the orchestrator calls the executor once per job, in plan
order and ``concurrency`` at a time, exactly as with ``local``; the executor runs the job
through the one retry loop (``harness.trial.run_trial``), whose every attempt is one Ray
task. Records stream back as trials finish and the driver alone writes the store. Seeds,
interleaving, resume, the concurrency limit, retries and the circuit breaker therefore stay
the driver's, identical on both executors.

Worker side (``_attempt_on_worker``): each Ray worker process keeps, per run, the resolved
suite (shipped once through the object store), a sandbox provider and a persistent event
loop, and runs one attempt there (``harness.trial.run_attempt``); what it spent and how it
ended come back to the driver's loop. With the Docker sandbox the driver pins the images; a
worker adopts the driver's pinned image ids, so rule 1 holds across machines. A node whose daemon lacks an image gets
it from the driver's node (``_ImageDepot``: ``docker save`` once per run into the object
store, ``docker load`` on the node, the id checked), or, with ``ship_images: false``,
refuses the trial as an infrastructure error.

Scheduling: with the Docker sandbox every task needs one unit of the custom resource
``docker`` (declare it on nodes with a daemon: ``ray start --resources='{"docker": 8}'``;
the number is how many trials that node runs at once) and no CPU. Ray never retries a task
itself (``max_retries=0``): when a worker process or a whole node dies mid-attempt, the
attempt is a ``NodeLost`` infrastructure error (usage unknown) and the loop runs the next
attempt (on any node with capacity) until the suite's ``retries.max_attempts`` are used up,
numbered as every other attempt.

``ray`` is imported only here, and only when the executor is chosen.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import pickle
import socket
import uuid
from dataclasses import dataclass
from typing import Any

import anyio

from harness import errors
from harness.agents.base import Usage
from harness.executors import Executor
from harness.executors.options import RayOptions
from harness.plan import Job
from harness.resolve import Resolved
from harness.run_context import RunContext, run_context
from harness.trial import run_attempt, run_trial
from harness.trial_rows import TrialRecord

log = logging.getLogger(__name__)


class NodeLost(errors.InfraError):
    """The Ray worker process or node running a trial died, or the trial's result was lost."""


class RayUnavailable(errors.HarnessError):
    """The Ray cluster cannot be reached (or ray is not installed)."""


def _check_reachable(address: str | None, timeout: float) -> None:
    """Fail fast when a ``host:port`` (or ``ray://host:port``) address accepts no TCP
    connection: ``ray.init`` would keep retrying the cluster's GCS for minutes."""
    if not address or address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return  # not a host:port form; let Ray interpret it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayUnavailable(
            f"cannot connect to the Ray cluster at {address}: nothing answers within "
            f"{timeout:g}s ({exc}); start it with `ray start --head` or fix --ray-address"
        ) from None


@dataclass
class _Payload:
    """What a worker needs to rebuild a run's context; shipped once per run."""

    run_id: str
    resolved: Resolved
    sandbox: str
    image_ids: dict[str, str | None]
    pinned: dict[str, object]
    """What the driver's sandbox provider pinned per environment (Docker: a ``PinnedImage``),
    handed unread to the workers' providers to adopt."""
    depot: Any = None
    """Handle of the ``_ImageDepot`` actor on the driver's node (None: no shipping)."""


class _ImageDepot:
    """A Ray actor on the driver's node: hands the driver's pinned images, as ``docker save``
    archives, to worker nodes whose daemons lack them. Each archive is made once per run and
    kept in the object store while the actor lives (the executor kills it at run end)."""

    def __init__(self, docker_url: str | None):
        self.docker_url = docker_url
        self._refs: dict[str, object] = {}
        """Image id → the Ray ``ObjectRef`` of its archive (opaque here)."""

    def archive(self, image_id: str) -> list:
        """``[ObjectRef]`` of the archive (in a list, so the caller gets the reference)."""
        if image_id not in self._refs:
            import ray

            from harness.sandbox.docker import make_client
            from harness.sandbox.docker_images import export_image

            client = make_client(self.docker_url, timeout=600, pool=1)
            try:
                self._refs[image_id] = ray.put(export_image(client, image_id))
            finally:
                client.close()
        return [self._refs[image_id]]


# ----------------------------------------------------------------------------- driver
class RayExecutor(Executor):
    """Runs each trial as a Ray task; see the module docstring."""

    name = "ray"
    Options = RayOptions

    def __init__(
        self,
        rc: RunContext,
        sandbox: str,
        *,
        address: str | None = None,
        options: RayOptions | None = None,
    ):
        self.options = options if options is not None else RayOptions()
        try:
            import ray
        except ImportError:
            raise RayUnavailable(
                "executor 'ray' needs the ray package: pip install 'harness[ray]'"
            ) from None
        self._ray = ray
        self.rc = rc
        self._owns_ray = False
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS")
            _check_reachable(address, self.options.connect_timeout_s)
            try:
                ray.init(
                    address=address,
                    namespace=self.options.namespace,
                    runtime_env=self.options.runtime_env,
                    log_to_driver=self.options.log_to_driver,
                    logging_level=logging.WARNING,
                    # No dashboard for a Ray this process starts; None is Ray's own default.
                    include_dashboard=None if address else False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailable(
                    f"cannot connect to the Ray cluster at {address or '(local)'}: {exc}"
                ) from None
            self._owns_ray = True

        docker = sandbox == "docker" and bool(rc.resolved.environments)
        resources = self.options.resources
        if resources is None:
            resources = {"docker": 1} if docker else {}
        num_cpus = self.options.num_cpus
        if num_cpus is None:
            num_cpus = 0 if docker else 1
        self._remote = ray.remote(_attempt_on_worker).options(
            num_cpus=num_cpus, resources=resources, max_retries=0, retry_exceptions=False
        )
        pinned = rc.provider.pinned_images() if rc.provider is not None else {}
        self._depot = None
        if docker and pinned and self.options.ship_images:
            self._depot = _start_depot(ray, rc.resolved.suite.sandbox_options)
        payload = _Payload(
            run_id=rc.run_id,
            resolved=rc.resolved,
            sandbox=sandbox,
            image_ids=dict(rc.image_ids),
            pinned=pinned,
            depot=self._depot,
        )
        self._key = f"{rc.run_id}:{uuid.uuid4().hex}"
        # In a list, so Ray passes the reference itself: a worker fetches it once per run.
        self._box = [ray.put(payload)]

    async def __call__(self, job: Job) -> TrialRecord:
        return await run_trial(job, self.rc, functools.partial(self._attempt, job))

    async def _attempt(self, job: Job, number: int, spent: Usage) -> TrialRecord:
        """Attempt ``number`` of ``job`` as one Ray task: its record, or its error raised
        here for the retry loop (a lost worker or node: ``NodeLost``, usage unknown)."""
        ray = self._ray
        ref = self._remote.remote(self._key, self._box, job, number)
        try:
            outcome: _Outcome = await ref
        except anyio.get_cancelled_exc_class():
            ray.cancel(ref)  # KeyboardInterrupt in the task: its sandbox is destroyed
            _unknown(spent)
            raise
        except ray.exceptions.RayError as exc:
            _unknown(spent)
            raise NodeLost(f"attempt {number} lost: {_describe(exc)}") from exc
        for f in dataclasses.fields(Usage):
            setattr(spent, f.name, getattr(outcome.spent, f.name))
        if outcome.error is not None:
            raise outcome.error
        assert outcome.record is not None
        return outcome.record

    async def aclose(self) -> None:
        if self._depot is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(self._depot)
            self._depot = None
        if self._owns_ray:
            await anyio.to_thread.run_sync(self._ray.shutdown)
            self._owns_ray = False


def _start_depot(ray, sandbox_options: dict[str, object]):
    """The image depot actor, pinned to this (the driver's) node and its Docker daemon."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    base_url = sandbox_options.get("base_url")  # the docker backend's (checked as a str)
    docker_url = (
        base_url if isinstance(base_url, str) and base_url else os.environ.get("DOCKER_HOST")
    )
    return (
        ray.remote(_ImageDepot)
        .options(
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
        )
        .remote(docker_url)
    )


def _unknown(spent: Usage) -> None:
    """An attempt whose usage never came back: unknown, never stored as zero."""
    spent.cost_usd, spent.cost_known, spent.tokens_known = None, False, False


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


# ----------------------------------------------------------------------------- worker
@dataclass
class _Outcome:
    """How one attempt on a worker ended: its record, or the error that ended it, and what
    it spent either way."""

    record: TrialRecord | None
    error: Exception | None
    spent: Usage


_STATES: dict[str, RunContext] = {}
_RUNNER: asyncio.Runner | None = None


def _runner() -> asyncio.Runner:
    """One event loop per worker process, kept across tasks (clients and limiters bind to it)."""
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = asyncio.Runner()
    return _RUNNER


def _attempt_on_worker(key: str, box: list, job: Job, number: int) -> _Outcome:
    """The Ray task: attempt ``number`` of one trial (``run_attempt``), its error returned
    rather than raised, so the driver's loop decides (a retry only for infrastructure)."""
    spent = Usage()
    try:
        rc = _STATES.get(key)
        if rc is None:
            import ray

            payload: _Payload = ray.get(box[0])
            for old in [k for k in _STATES if k != key]:  # a previous run in this process
                _close(_STATES.pop(old))
            rc = _STATES[key] = _runner().run(_open_state(payload))
        return _Outcome(_runner().run(run_attempt(job, rc, number, spent)), None, spent)
    except Exception as exc:  # noqa: BLE001 - the driver's loop classifies it
        return _Outcome(None, _picklable(exc), spent)


def _picklable(exc: Exception) -> Exception:
    """``exc``, or a harness error naming it when it cannot cross to the driver (pickled
    and read back here: an exception whose constructor takes other arguments fails there)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to pickle or unpickle
        return errors.HarnessError(_describe(exc))
    return exc


async def _open_state(payload: _Payload) -> RunContext:
    resolved = payload.resolved
    provider = None
    if resolved.environments and resolved.sandbox is not None:
        provider = resolved.sandbox.open()
        # containers of worker processes that died on this node
        await anyio.to_thread.run_sync(provider.gc)
        fetch = None if payload.depot is None else functools.partial(_fetch, payload.depot)
        await provider.adopt_images(payload.pinned, fetch)
    return run_context(payload.run_id, resolved, provider, payload.image_ids)


def _fetch(depot, image_id: str) -> bytes:
    """Blocking: the ``docker save`` archive of a pinned image, from the driver's node."""
    import ray

    (ref,) = ray.get(depot.archive.remote(image_id))
    return ray.get(ref)


def _close(rc: RunContext) -> None:
    provider = rc.provider
    if provider is not None:
        try:
            _runner().run(provider.close())
        except Exception as exc:  # best effort: the next run's gc removes leftovers
            log.warning("closing the sandbox provider failed: %s", exc)


__all__ = ["NodeLost", "RayExecutor", "RayOptions", "RayUnavailable"]
