"""The orchestrator: runs a plan's jobs with bounded concurrency and writes one row each.

It is the only writer of the store. SIGINT/SIGTERM once: no new trials start, in-flight
trials finish and are written. A model endpoint's breaker tripping (``UpstreamDown``) stops
new trials the same way; the trials it cut stay unfinished. Twice: in-flight trials are cancelled (their sandboxes are
still destroyed) and stay unfinished, so ``harness run --resume RUN_ID`` re-runs them.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from harness import errors
from harness.breaker import UpstreamDown
from harness.executors import Executor, LocalExecutor
from harness.plan import Job
from harness.store import Store
from harness.store.db import UnstorableTrial
from harness.text import printable
from harness.trial import RunContext, TrialRecord
from harness.trial_rows import unstorable_row


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
    writer = _Writer(store)

    async def worker() -> None:
        for job in pending:
            if stopping.is_set() or writer.error:
                return
            try:
                record = await run_one(job)
            except UpstreamDown as exc:  # no new trials; this one stays unfinished
                outcome.stopped = outcome.stopped or exc
                stopping.set()
                return
            writer.put(record)
            outcome.count(record.trial.status, record.trial.reason)
            sink.trial_done(record.trial.status)

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
                    else:
                        sink.note("aborting in-flight trials; they stay unfinished (resumable)")
                        work_scope.cancel()

        async def watch_writer() -> None:
            # A store that cannot be written (disk full, database gone) stops the run within
            # a second: trials in flight are cancelled rather than run for nothing.
            while writer.error is None:
                await anyio.sleep(0.2)
            stopping.set()
            sink.note(f"stopping: {writer.error}")
            work_scope.cancel()

        if handle_signals:
            outer.start_soon(watch_signals)
        outer.start_soon(watch_writer)
        with work_scope:
            async with anyio.create_task_group() as tg:
                for _ in range(max(1, concurrency)):
                    tg.start_soon(worker)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(writer.close, outcome)
            if rc.interrupted and writer.error is None:
                await anyio.to_thread.run_sync(store.write_attempts, list(rc.interrupted))
        outer.cancel_scope.cancel()
    if writer.error:
        raise writer.error
    return outcome


class _Writer:
    """The single store writer: a thread committing one transaction per finished trial.

    Workers hand records over without waiting for the commit (a thread hop per trial costs
    more than the SQLite write itself); ``close`` waits until every record is committed.
    Transient write conflicts are retried; a persistent failure stops new trials.
    """

    def __init__(self, store: Store):
        self.store = store
        self.queue: queue.SimpleQueue[TrialRecord | None] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.degraded: list[tuple[str, str]] = []
        """(status it had, reason stored) of each trial stored as ``unstorable_row``."""
        self.thread = threading.Thread(target=self._loop, name="store-writer", daemon=True)
        self.thread.start()

    def put(self, record: TrialRecord) -> None:
        self.queue.put(record)

    def close(self, outcome: RunOutcome | None = None) -> None:
        """Wait until every record is committed; then count in ``outcome`` each trial
        stored as ``unstorable_row`` as what the store holds."""
        self.queue.put(None)
        self.thread.join()
        for status, reason in self.degraded:
            if outcome is None:
                break
            outcome.counts[status] -= 1
            outcome.counts[errors.HARNESS_ERROR] += 1
            outcome.harness_errors[reason[:300]] += 1

    def _loop(self) -> None:
        while (record := self.queue.get()) is not None:
            if self.error is not None:  # the store is broken: drop what is still queued
                continue
            for attempt in range(5):
                try:
                    self._write(record)
                    break
                except errors.StoreConflict as exc:
                    if attempt == 4:
                        self.error = exc
                    time.sleep(0.2 * 2**attempt)
                except Exception as exc:  # a bug or a broken database: stop the run
                    self.error = exc
                    break

    def _write(self, record: TrialRecord) -> None:
        """One trial in one transaction; a trial the database refuses is stored without the
        refused values (``unstorable_row``), so one bad row never stops the run."""
        try:
            self.store.write_trial(record.trial, record.attempts, record.events, record.blobs)
        except UnstorableTrial as exc:
            row = unstorable_row(record.trial, str(exc))
            attempts = [
                a.model_copy(update={"error": a.error and printable(a.error)})
                for a in record.attempts
            ]
            self.store.write_trial(row, attempts)
            self.degraded.append((record.trial.status, row.reason))
