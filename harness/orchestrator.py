"""The orchestrator: runs a plan's jobs with bounded concurrency and writes one row each.

It is the only writer of the store. SIGINT/SIGTERM once: no new trials start, in-flight
trials finish and are written. A model endpoint's breaker tripping (``UpstreamDown``) stops
new trials the same way; the trials it cut stay unfinished. Twice: in-flight trials are
cancelled (their sandboxes are still destroyed) and stay unfinished, so ``harness run
--resume RUN_ID`` re-runs them; should that cleanup hang, the process ends anyway
(``harness.hard_stop``).
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from harness import errors, hard_stop
from harness.breaker import UpstreamDown
from harness.executors import Executor, LocalExecutor
from harness.plan import Job
from harness.run_context import RunContext
from harness.store import Store, now
from harness.store_writer import StoreWriter


class ProgressSink(Protocol):
    def trial_done(self, status: str) -> None: ...

    def note(self, text: str) -> None: ...


class _Silent:
    def trial_done(self, status: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass
class RunOutcome:
    planned: int
    counts: Counter = field(default_factory=Counter)
    interrupted: bool = False
    harness_errors: Counter = field(default_factory=Counter)
    """First line of each harness error's reason → trials (printed once in the summary)."""
    stopped: UpstreamDown | None = None
    """Set when a model endpoint's breaker stopped the run (its unfinished trials resume)."""

    @property
    def finished(self) -> int:
        return sum(self.counts.values())

    @property
    def unresolved(self) -> int:
        return self.finished - self.counts[errors.PASSED] - self.counts[errors.FAILED]

    def recount(self, degraded: list[tuple[str, str]]) -> None:
        """Count each trial stored as ``unstorable_row`` (its status then, the reason
        stored) as what the store holds: a harness error."""
        for status, reason in degraded:
            self.counts[status] -= 1
            self.counts[errors.HARNESS_ERROR] += 1
            self.harness_errors[reason[:300]] += 1

    def count(self, status: str, reason: str | None) -> None:
        """One finished trial: its status, and a harness error's first line for the summary."""
        self.counts[status] += 1
        if status == errors.HARNESS_ERROR:
            self.harness_errors[(reason or "unknown").splitlines()[0][:300]] += 1


async def execute(
    rc: RunContext,
    jobs: Iterable[Job],
    store: Store,
    *,
    concurrency: int,
    progress: ProgressSink | None = None,
    handle_signals: bool = True,
    executor: Executor | None = None,
) -> RunOutcome:
    """Run ``jobs`` (in plan order, ``concurrency`` at a time) and write one row each.

    ``executor`` decides where a trial runs: in this process by default (``run_trial``), or
    elsewhere (a Ray cluster) as long as it returns the trial's record to this driver, which
    alone writes the store.
    """
    run_one: Executor = executor or LocalExecutor(rc, "")
    jobs = list(jobs)
    sink = progress or _Silent()
    outcome = RunOutcome(planned=len(jobs))
    pending = iter(jobs)
    stopping = anyio.Event()
    writer = StoreWriter(store, rc.run_id, rc.resolved.suite.store_outage_s)

    async def worker() -> None:
        for job in pending:
            await writer.present(stopping)  # the store is away: no new trial until it is back
            if stopping.is_set() or writer.error:
                return
            writer.started(job, now())
            try:
                record = await run_one(job)
            except UpstreamDown as exc:  # no new trials; this one stays unfinished
                outcome.stopped = outcome.stopped or exc
                stopping.set()
                return
            outcome.count(record.trial.status, record.trial.reason)
            sink.trial_done(record.trial.status)
            await writer.hand_over(record)

    async with anyio.create_task_group() as outer:
        work_scope = anyio.CancelScope()

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                count = 0
                async for _ in signals:
                    count += 1
                    outcome.interrupted = True
                    stopping.set()
                    if count == 1:
                        sink.note("stopping: in-flight trials finish; signal again to abort them")
                    elif count == 2:
                        sink.note("aborting in-flight trials; they stay unfinished (resumable)")
                        work_scope.cancel()
                        hard_stop.arm(_abort_line(rc.run_id, store.url))

        async def watch_writer() -> None:
            # A store that cannot be written (disk full, gone for good) stops the run within a
            # second: trials in flight are cancelled. Its error is the run's one line.
            await writer.failed(sink.note)
            stopping.set()
            work_scope.cancel()

        if handle_signals:
            outer.start_soon(watch_signals)
        outer.start_soon(watch_writer)
        with work_scope:
            async with anyio.create_task_group() as tg:
                for _ in range(max(1, concurrency)):
                    tg.start_soon(worker)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(writer.close)
            outcome.recount(writer.degraded)
            if writer.error is None:  # unfinished trials: attempts kept, marks removed
                await anyio.to_thread.run_sync(store.end_in_flight, rc.run_id, rc.interrupted)
        outer.cancel_scope.cancel()
    if writer.error:
        raise writer.error
    return outcome


def _abort_line(run_id: str, store_url: str) -> str:
    from harness.store.refs import resume_command

    return (
        f"aborted: cleanup did not finish within {hard_stop.ABORT_LIMIT_S:g} s of the second "
        f"signal; sandboxes left behind are removed by `harness gc`; resume with "
        f"`{resume_command(run_id, store_url)}`"
    )
