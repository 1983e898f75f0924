"""Starting and resuming runs: choose the sandbox, pin images, record the run, execute."""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import anyio

from harness import __version__, exitcodes
from harness.config.loader import ResolvedSuite
from harness.config.overrides import Overrides, given
from harness.errors import ConfigError, Interrupted, RunBusy
from harness.executors import Executor, bind
from harness.lockfile import agent_builds, check_lock_for
from harness.models.probe import probe_endpoints
from harness.network import announcement, phases
from harness.orchestrator import RunOutcome, execute
from harness.ownership import check_resumable
from harness.plan import build_plan
from harness.preflight import preflight
from harness.resolve import Resolved, load
from harness.run_context import RunContext, run_context
from harness.sandbox.base import Environment, SandboxProvider
from harness.store import Run, Store, now, resolve_url

if TYPE_CHECKING:
    from harness.pairwise.at_end import EndJudging

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    run_id: str
    outcome: RunOutcome
    store_url: str
    sandbox: str
    pairwise: EndJudging | None = None
    """The suite's pairwise judge at the end (``pairwise:``), when it has one."""

    @property
    def resume_command(self) -> str:
        from harness.store.refs import resume_command

        return resume_command(self.run_id, self.store_url)

    @property
    def exit_code(self) -> int:
        if self.outcome.interrupted:
            return exitcodes.INTERRUPTED
        if self.outcome.stopped is not None:
            return exitcodes.ENVIRONMENT if self.outcome.stopped.config else exitcodes.UNRESOLVED
        if self.outcome.unresolved or (self.pairwise and self.pairwise.error):
            return exitcodes.UNRESOLVED
        return exitcodes.OK


GC_LIMIT_S = 60.0
"""Longest wait, at start, for the sandboxes left behind by killed runs to be removed."""


def new_run_id() -> str:
    return f"{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"  # unique across machines


def start(
    suite_path: str,
    overrides: Mapping[str, object] | None = None,
    store_url: str | None = None,
    resume: str | None = None,
    progress_enabled: bool = True,
    locked: bool = False,
    loaded: Resolved | None = None,
) -> RunResult:
    """Start (or resume) a run. A signal at any moment before the trials run ends it as
    ``Interrupted``, naming the run when its row was written (so it can be resumed).
    ``loaded``: the suite already loaded with these overrides (the CLI loads it first)."""
    ids: list[tuple[Store, str]] = []
    try:
        return _start(
            suite_path, overrides, store_url, resume, progress_enabled, locked, ids, loaded
        )
    except KeyboardInterrupt:
        for sig in (signal.SIGINT, signal.SIGTERM):  # already stopping: a second one waits
            signal.signal(sig, signal.SIG_IGN)
        recorded, url = None, None
        for store, run_id in ids:
            with suppress(Exception):
                if store.get_run(run_id) is not None:
                    recorded, url = run_id, store.url
        from harness.store.refs import resume_command

        raise Interrupted(recorded, recorded and resume_command(recorded, url)) from None


def _start(
    suite_path: str,
    given_flags: Mapping[str, object] | None = None,
    store_url: str | None = None,
    resume: str | None = None,
    progress_enabled: bool = True,
    locked: bool = False,
    ids: list | None = None,
    loaded: Resolved | None = None,
) -> RunResult:
    ids = [] if ids is None else ids
    overrides = given(given_flags)
    if resume:
        from harness.store.refs import find_run, no_arm, open_for_reading

        store = open_for_reading(store_url)
        run = find_run(store, no_arm(resume, "run --resume", "a run resumes whole"))
        check_resumable(run)
        owner = (run.pid, run.host)
        ids.append((store, run.id))
        # Where trials run (executor, Ray address) is outside the config hash: a resumed
        # run may change it.
        placement = Overrides()
        if "executor" in overrides:
            placement["executor"] = overrides["executor"]
        if "ray_address" in overrides:
            placement["ray_address"] = overrides["ray_address"]
        resolved = load(run.suite_path, {**given(run.overrides), **placement}, store_url)
        preflight(resolved)
        if resolved.config_hash != run.config_hash:
            raise ConfigError(
                run.suite_path,
                "",
                f"the suite or its tasks changed since run {run.id} started "
                "(config hash differs); start a new run instead of resuming",
            )
        run_id, overrides = run.id, run.overrides
    else:
        resolved = loaded if loaded is not None else load(suite_path, overrides, store_url)
        preflight(resolved)
        store = Store(resolve_url(store_url, resolved.suite.store))
        run_id = new_run_id()
        owner = None
        ids.append((store, run_id))
    return _start_resolved(
        resolved, store, run_id, overrides, resume, owner, progress_enabled, locked
    )


def _start_resolved(
    resolved: Resolved,
    store: Store,
    run_id: str,
    overrides: Overrides,
    resume: str | None,
    owner: tuple[int, str] | None,
    progress_enabled: bool,
    locked: bool,
) -> RunResult:
    assert resolved.sandbox is not None
    sandbox_name = resolved.sandbox.name
    provider = resolved.sandbox.open() if resolved.environments else None
    result: RunResult = anyio.run(
        _run,
        resolved,
        store,
        provider,
        sandbox_name,
        run_id,
        overrides,
        owner if resume else None,
        progress_enabled,
        locked,
    )
    o = result.outcome
    if resolved.pairwise is not None and not (o.interrupted or o.stopped):
        from harness.pairwise.at_end import judge_at_end

        arms = resolved.suite.pairwise.arms if resolved.suite.pairwise else None
        result.pairwise = judge_at_end(store, run_id, resolved.pairwise, arms)
    return result


async def _run(
    resolved: Resolved,
    store: Store,
    provider: SandboxProvider | None,
    sandbox_name: str,
    run_id: str,
    overrides: Overrides,
    owner: tuple[int, str] | None,
    progress_enabled: bool,
    locked: bool,
) -> RunResult:
    """Prepare, record and execute. ``owner`` (pid, host) is set on resume: the run row's
    owner when this process checked it, taken over atomically before any trial runs."""
    from harness.progress import TrialProgress

    image_ids = await _prepare(resolved, provider, locked)
    all_jobs = build_plan(resolved)
    rc = run_context(run_id, resolved, provider, image_ids)
    executor = None
    row_written = False
    store.reserve_space()
    try:
        # Before the run row: a wrong Ray address fails here and leaves no "running" run.
        executor = bind(resolved).open(rc, sandbox_name, resolved.suite.ray_address)
        jobs = _start_run_row(
            resolved, store, run_id, all_jobs, overrides, owner, sandbox_name, image_ids
        )
        row_written = True
        with TrialProgress(len(jobs), f"run {run_id}", enabled=progress_enabled) as progress:
            outcome = await execute(
                rc,
                jobs,
                store,
                concurrency=resolved.suite.concurrency,
                progress=progress,
                executor=executor,
            )
        if resolved.suite.repeats.mode == "adaptive" and not (
            outcome.interrupted or outcome.stopped
        ):
            await _repeat_phase(
                rc, resolved, store, run_id, len(all_jobs), outcome, progress_enabled, executor
            )
    except BaseException as exc:
        if row_written:  # the run row must not claim "running" for a run that is gone
            status = "failed" if isinstance(exc, Exception) else "interrupted"
            with anyio.CancelScope(shield=True), suppress(Exception):
                store.update_run(run_id, status=status, finished_at=now())
        raise
    finally:
        store.release_space()
        with anyio.CancelScope(shield=True):
            if executor is not None:
                await executor.aclose()
            if provider is not None:
                await provider.close()
            from harness.models import aclose_clients

            await aclose_clients()
            from harness.agent_process.jail import close_templates

            await anyio.to_thread.run_sync(close_templates)
    status = "interrupted" if outcome.interrupted else "stopped" if outcome.stopped else "finished"
    store.update_run(run_id, status=status, finished_at=now())
    return RunResult(run_id, outcome, store.url, sandbox_name)


async def _prepare(
    resolved: Resolved, provider: SandboxProvider | None, locked: bool
) -> dict[str, str | None]:
    """Everything a run needs before its run row, in order: the lock file's pins, the
    sandboxes' leftovers collected, model endpoints that answer (exit 5 if not), then the
    images, agent CLIs and task networks prepared. Returns the pinned image id per
    environment (none without a sandbox provider)."""
    if provider is not None:
        # sandboxes left behind by killed runs on this host
        with anyio.move_on_after(GC_LIMIT_S):  # a daemon stuck on one of them: go on
            await anyio.to_thread.run_sync(provider.gc, abandon_on_cancel=True)
    if locked:  # without a provider no images to check; pinned agents still are
        await check_lock_for(resolved, provider)
    # Every model endpoint answers before anything is built or recorded (exit 5 if not).
    await probe_endpoints(resolved)
    opened = announcement([loaded.task for loaded in resolved.tasks])
    if opened is not None:
        log.warning(opened)
    if provider is None:
        return {}
    image_ids = await provider.prepare(list(resolved.environments.values()))
    # ready-made agents' CLIs: built into images (docker), staged and hashed (bwrap)
    await provider.prepare_agents(agent_builds(resolved))
    await provider.prepare_networks(_task_networks(resolved))  # tasks' own hosts
    return image_ids


def _task_networks(resolved: ResolvedSuite) -> list[tuple[Environment, list[str]]]:
    """(environment, hosts) for every allowlist a task adds beyond its environment's own:
    any phase's (``harness.network.phases``: the agent's, each step's, each grading)."""
    wanted: dict[tuple[str, tuple[str, ...]], tuple[Environment, list[str]]] = {}
    for loaded in resolved.tasks:
        for phase in phases(resolved.environments, loaded.task):
            if phase.policy.mode == "allowlist":
                hosts = phase.policy.hosts
                wanted[(phase.environment.name, hosts)] = (phase.environment, list(hosts))
    return list(wanted.values())


def _start_run_row(
    resolved: Resolved,
    store: Store,
    run_id: str,
    all_jobs: list,
    overrides: Overrides,
    owner: tuple[int, str] | None,
    sandbox_name: str,
    image_ids: dict[str, str | None],
) -> list:
    """Write (or, on resume, take over) the run row; return the jobs still to run."""
    if owner is not None:
        if not store.claim_run(run_id, os.getpid(), socket.gethostname(), *owner):
            now_owner = store.get_run(run_id)
            pid = now_owner.pid if now_owner else "?"
            raise RunBusy(f"run {run_id} was just resumed by process {pid}; refused")
        # Trials the last driver died running: their cut attempts count (driver_died).
        store.record_driver_deaths(run_id)
        done = store.finished_keys(run_id)
        return [j for j in all_jobs if j.key not in done]
    store.create_run(
        Run(
            id=run_id,
            suite_name=resolved.suite.name,
            suite_path=str(resolved.path),
            description=resolved.suite.description,
            config_hash=resolved.config_hash,
            harness_version=__version__,
            config={
                "suite": resolved.suite.model_dump(mode="json"),
                "tasks": {
                    t.task.id: t.task.model_dump(mode="json", by_alias=True) for t in resolved.tasks
                },
                "environments": {
                    n: {**e.spec.model_dump(mode="json"), "root": str(e.root)}
                    for n, e in resolved.environments.items()
                },
                **({"subset": resolved.subset} if resolved.subset else {}),
                **_pairwise_entry(resolved),
            },
            overrides=overrides,
            seed=resolved.suite.seed,
            trials_per_task=resolved.suite.trials,
            arms=[a.name for a in resolved.suite.arms],
            sandbox=sandbox_name,
            image_ids=image_ids,
            jobs_planned=len(all_jobs),
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=now(),
        )
    )
    return all_jobs


def _pairwise_entry(resolved: Resolved) -> dict[str, object]:
    """The run config's ``pairwise`` entry (the judge's setup hash), when the suite has one."""
    if resolved.pairwise is None or resolved.suite.pairwise is None:
        return {}
    from harness.pairwise.at_end import run_config_entry

    return {"pairwise": run_config_entry(resolved.pairwise, resolved.suite.pairwise.arms)}


async def _repeat_phase(
    rc: RunContext,
    resolved: ResolvedSuite,
    store: Store,
    run_id: str,
    planned_first: int,
    outcome: RunOutcome,
    progress_enabled: bool,
    executor: Executor | None = None,
) -> None:
    """Adaptive repeats, phase 2: read phase 1 from the store, then run extra trial indices
    of the discordant or unstable tasks for every arm alike (``plan.repeat_jobs``)."""
    from harness.analysis.load import load_run_table
    from harness.plan import repeat_jobs
    from harness.progress import TrialProgress

    table = await anyio.to_thread.run_sync(load_run_table, store, run_id)
    extra = repeat_jobs(resolved, table.trials)
    done = await anyio.to_thread.run_sync(store.finished_keys, run_id)
    todo = [j for j in extra if j.key not in done]
    store.update_run(run_id, jobs_planned=planned_first + len(extra))
    if not todo:
        return
    title = f"run {run_id}: adaptive repeats"
    with TrialProgress(len(todo), title, enabled=progress_enabled) as progress:
        more = await execute(
            rc,
            todo,
            store,
            concurrency=resolved.suite.concurrency,
            progress=progress,
            executor=executor,
        )
    outcome.planned += more.planned
    outcome.counts.update(more.counts)
    outcome.interrupted = outcome.interrupted or more.interrupted
    outcome.stopped = outcome.stopped or more.stopped
