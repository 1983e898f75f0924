"""The driver's single store writer: a thread committing one transaction per finished trial.

Workers hand records over without waiting for the commit (a thread hop per trial costs
more than the SQLite write itself), but never run more than ``MAX_QUEUED`` items ahead of
it: trials faster than commits would otherwise pile up in memory, uncommitted, and a killed
driver would lose every one of them. ``close`` waits until every record is committed. Before
its trial runs, each job is marked in flight (``harness.store.in_flight``), in the same
queue, so the mark is committed before the trial's own row.

**Outages.** A write that fails transiently (the server down or restarting, a connection
cut, a lock held past the busy timeout) is retried with backoff (0.5 s doubling to 10 s)
for up to the suite's ``store_outage_s`` (default 60 s), counted from the first failed
try, with one note when the outage starts and one when the store is back; no new trial
starts meanwhile. A store that does not come back in that window stops the run:
``StoreUnavailable`` with one line naming the store, the window, the last error and the
resume command. A write whose commit was lost with its connection is found stored on the
retry (its trial's row is there) and counts as written, never twice.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import anyio
from sqlalchemy.exc import IntegrityError

from harness import errors
from harness.plan import Job
from harness.store import Store
from harness.store.db import StoreUnavailable, UnstorableTrial
from harness.store.refs import resume_command
from harness.store.tables import TrialKey
from harness.text import printable
from harness.trial_rows import TrialRecord, unstorable_row

_NOTHING = object()
MAX_QUEUED = 64
"""Items (finished trials, in-flight marks) the writer may have waiting before a worker that
hands it another waits for it (``wait_for_room``)."""
BACKOFF_S = (0.5, 10.0)
"""First and longest wait between two tries of a write while the store is away."""


@dataclass(frozen=True)
class _Started:
    """A job handed to the executor at ``at``: mark it in flight."""

    key: TrialKey
    at: datetime


class StoreWriter:
    """Commits finished trials (and in-flight marks) in order, waiting out store outages."""

    def __init__(self, store: Store, run_id: str, outage_s: float = 60.0):
        self.store, self.run_id, self.outage_s = store, run_id, outage_s
        self.queue: queue.SimpleQueue[TrialRecord | _Started | None] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.away_since: float | None = None
        """When the store stopped answering (monotonic), while it is away."""
        self.notes: queue.SimpleQueue[str] = queue.SimpleQueue()
        """One line when an outage starts and one when it ends, for the progress display."""
        self.degraded: list[tuple[str, str]] = []
        """(status it had, reason stored) of each trial stored as ``unstorable_row``."""
        self.thread = threading.Thread(target=self._loop, name="store-writer", daemon=True)
        self.thread.start()

    def started(self, job: Job, at: datetime) -> None:
        """``job`` is handed to the executor now: marked in flight before its row."""
        key = TrialKey(
            run_id=self.run_id,
            arm=job.arm,
            task_id=job.task_id,
            trial_index=job.trial_index,
            variant=job.variant,
        )
        self.queue.put(_Started(key, at))

    def put(self, record: TrialRecord) -> None:
        self.queue.put(record)

    async def hand_over(self, record: TrialRecord) -> None:
        """Queue a finished trial, then wait while the writer is too far behind."""
        self.put(record)
        await self.wait_for_room()

    async def wait_for_room(self) -> None:
        """Return once the writer has at most ``MAX_QUEUED`` items waiting (or has stopped):
        what keeps memory flat and a SIGKILL's loss to a few trials when trials finish faster
        than the store commits them."""
        while self.queue.qsize() > MAX_QUEUED and self.error is None and self.thread.is_alive():
            await anyio.sleep(0.002)

    def close(self) -> None:
        """Wait until everything queued is committed (or dropped after a failure)."""
        self.queue.put(None)
        self.thread.join()

    async def present(self, stopping: anyio.Event) -> None:
        """Return once the store answers (at once unless it is away) or the run stops."""
        while self.away_since is not None and not stopping.is_set():
            await anyio.sleep(0.2)

    async def failed(self, note: Callable[[str], None]) -> None:
        """Pass the writer's notes on until it fails for good (``error`` is then set)."""
        while True:
            while not self.notes.empty():
                note(self.notes.get())
            if self.error is not None:
                return
            await anyio.sleep(0.2)

    def _loop(self) -> None:
        following: TrialRecord | _Started | None | object = _NOTHING
        while True:
            item = self.queue.get() if following is _NOTHING else following
            following = _NOTHING
            if item is None:
                return
            if self.error is not None:  # the store is broken: drop what is still queued
                continue
            if isinstance(item, TrialRecord):
                self._guarded(lambda r=item: self._write(r), item.trial)
                continue
            marks = [item]  # marks queued together are committed together
            while True:
                try:
                    following = self.queue.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(following, _Started):
                    break
                marks.append(following)
                following = _NOTHING
            self._guarded(lambda m=marks: self.store.mark_in_flight([(x.key, x.at) for x in m]))

    def _guarded(self, write, trial: TrialKey | None = None) -> None:
        try:
            self._retrying(write, trial)
        except Exception as exc:  # a store that stayed away, a bug: stop the run
            self.error = exc

    def _retrying(self, write, trial: TrialKey | None = None) -> None:
        """``write()``, tried again while the store is away, for up to ``outage_s``."""
        first_try = time.monotonic()
        wait, tried_before = BACKOFF_S[0], False
        while True:
            try:
                write()
            except IntegrityError:
                if tried_before and trial is not None and self.store.has_trial(trial):
                    return self._back()  # the lost commit went through
                raise
            except errors.StoreConflict as exc:
                if self.away_since is None:
                    self.away_since = first_try
                    self.notes.put(
                        f"store unavailable ({_cause(exc)}): waiting up to "
                        f"{self.outage_s:g} s for it to come back; no new trial starts"
                    )
                waited = time.monotonic() - self.away_since
                if waited >= self.outage_s:
                    raise StoreUnavailable(
                        f"the store {self.store.shown_url} did not come back within "
                        f"{self.outage_s:g} s ({_cause(exc)}); finished trials are kept; "
                        f"resume with `{resume_command(self.run_id, self.store.url)}`"
                    ) from None
                time.sleep(min(wait, max(0.0, self.outage_s - waited)))
                wait = min(wait * 2, BACKOFF_S[1])
                tried_before = True
                continue
            return self._back()

    def _back(self) -> None:
        if self.away_since is not None:
            self.notes.put(
                f"store back after {time.monotonic() - self.away_since:.0f} s: writing resumed"
            )
            self.away_since = None

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


def _cause(exc: BaseException) -> str:
    """The store's own words, one line, without our "store write failed: " prefix."""
    return str(exc).removeprefix("store write failed: ").splitlines()[0][:200]
