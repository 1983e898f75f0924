"""Trials that finish faster than the store commits them wait for the writer instead of
piling up uncommitted: the driver's memory stays flat and a SIGKILL costs a few trials, not
every trial run since the store fell behind (the 20,000-trial run of
benchmarks/reliability.py held 10,000 finished, unwritten trials in memory before)."""

from __future__ import annotations

import time

import anyio

from harness.store import Store
from harness.store.db import now
from harness.store.tables import TrialRow
from harness.store_writer import MAX_QUEUED, StoreWriter
from harness.trial_rows import TrialRecord
from tests.conftest import bare_run

TRIALS = 400


class SlowStore(Store):
    """A real SQLite store whose commits take 3 ms more, noting the writer's backlog."""

    writer: StoreWriter | None = None
    backlog: list[int]

    def write_trial(self, trial, attempts=(), events=(), blobs=None):  # type: ignore[override]
        time.sleep(0.003)
        if self.writer is not None:
            self.backlog.append(self.writer.queue.qsize())
        return super().write_trial(trial, attempts, events, blobs)


def _trial(run_id: str, i: int) -> TrialRow:
    return TrialRow(
        run_id=run_id,
        arm="a",
        task_id=f"t{i}",
        trial_index=0,
        seed=i,
        cluster="c",
        task_class="k",
        status="passed",
        passed=True,
        score=1.0,
        started_at=now(),
        finished_at=now(),
    )


def test_workers_wait_for_a_store_that_falls_behind(tmp_path):
    store = SlowStore(f"sqlite:///{tmp_path / 'h.db'}")
    store.backlog = []
    store.create_run(bare_run("r"))
    writer = StoreWriter(store, "r")
    store.writer = writer
    most_ahead = 0

    async def workers() -> None:
        async def worker(first: int) -> None:
            nonlocal most_ahead
            for i in range(first, TRIALS, 4):  # four workers, each trial done at once
                await writer.hand_over(TrialRecord(_trial("r", i), [], [], {}))
                most_ahead = max(most_ahead, writer.queue.qsize())

        async with anyio.create_task_group() as tg:
            for first in range(4):
                tg.start_soon(worker, first)

    anyio.run(workers)
    writer.close()
    assert writer.error is None
    assert len(store.trials("r")) == TRIALS  # nothing lost by waiting
    # Without the wait the backlog reaches most of the run (about TRIALS - 1).
    assert max(store.backlog) <= MAX_QUEUED + 4, max(store.backlog)
    assert most_ahead <= MAX_QUEUED
