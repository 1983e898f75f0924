"""Trials in flight: what a driver killed mid-attempt leaves, and what its resume records.

A trial is marked in flight (``trials_in_flight``) when the driver hands it to the
executor, and unmarked in the transaction that writes its final row; at the driver's
orderly end (finished, stopped, interrupted) every mark of the run is removed with the
attempts of the trials left unfinished. A mark still there when the run is resumed belongs to a
trial whose driver died during it (SIGKILL, an OOM kill, a power cut): the resume records
that attempt as ``driver_died`` (so attempt counts and the crash rate include it) and
unmarks the trial before running it again. Marks are written by the store writer, in order
before the trial's own row; one not yet committed when the driver dies (the trial's first
milliseconds) is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import and_, delete, func, insert, or_, select
from sqlalchemy.engine import Connection

from harness.errors import DRIVER_DIED
from harness.store.statements import insert_ignoring
from harness.store.tables import Attempt, InFlight, Trial, TrialKey, table_of

KEY = ("run_id", "arm", "task_id", "trial_index", "variant")
DIED = (
    "the driver process died during this attempt (killed, out of memory or the machine "
    "stopped); recorded when the run was resumed"
)


def _key(row: TrialKey | dict[str, object]) -> dict[str, object]:
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
    return {k: get(k) for k in KEY}


def mark(conn: Connection, keys: Iterable[tuple[TrialKey, datetime]]) -> None:
    """Mark trials in flight since their time (a mark already there is kept)."""
    rows = [{**_key(key), "started_at": at} for key, at in keys]
    if not rows:
        return
    conn.execute(insert_ignoring(conn.dialect.name, table_of(InFlight), list(KEY)), rows)


def unmark(conn: Connection, keys: Iterable[TrialKey | dict[str, object]]) -> None:
    """Unmark trials (their final row or interrupted attempts are written with this)."""
    table = table_of(InFlight)
    wanted = {tuple(_key(k).values()) for k in keys}
    if not wanted:
        return
    match = [and_(*(table.c[c] == v for c, v in zip(KEY, key, strict=True))) for key in wanted]
    conn.execute(delete(table).where(or_(*match)))


def record_driver_deaths(conn: Connection, run_id: str, now: datetime) -> int:
    """For each trial of ``run_id`` still marked and without a final row: one attempt
    ``driver_died`` (numbered after the trial's attempts already stored); then unmark all
    of the run's marks. Returns the attempts recorded."""
    marks, trials, attempts = table_of(InFlight), table_of(Trial), table_of(Attempt)
    finished = select(trials.c.id).where(*(trials.c[c] == marks.c[c] for c in KEY))
    stored = (
        select(func.coalesce(func.max(attempts.c.attempt), 0))
        .where(*(attempts.c[c] == marks.c[c] for c in KEY))
        .scalar_subquery()
    )
    lost = conn.execute(
        select(*(marks.c[c] for c in KEY), marks.c.started_at, stored.label("stored")).where(
            marks.c.run_id == run_id, ~finished.exists()
        )
    ).all()
    rows = [
        {
            **{c: getattr(r, c) for c in KEY},
            "attempt": int(r.stored) + 1,
            "outcome": DRIVER_DIED,
            "error": DIED,
            "started_at": r.started_at,
            "finished_at": now,
        }
        for r in lost
    ]
    if rows:
        conn.execute(insert(attempts), rows)
    clear(conn, run_id)
    return len(rows)


def clear(conn: Connection, run_id: str) -> None:
    """Unmark every trial of ``run_id`` (none of them is in flight any more)."""
    marks = table_of(InFlight)
    conn.execute(delete(marks).where(marks.c.run_id == run_id))
