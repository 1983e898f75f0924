"""The store: where runs and per-trial rows live. SQLite by default, any SQLAlchemy URL.

Only the orchestrator's driver writes; one transaction per finished trial, so a killed
process loses at most the trials that were in flight, never a finished one.

PostgreSQL (``postgresql://user:pass@host/db``) is the store for teams: several runs, from
several machines, write one database at once. Each process holds at most ``pool_size +
max_overflow`` connections; both can be given as URL query parameters
(``?pool_size=2&max_overflow=2``), which are read here and not passed to the driver.
Migrations run under a transaction-level advisory lock, so processes starting together
against an empty database apply each migration exactly once.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, text
from sqlalchemy.exc import (
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
    StatementError,
)
from sqlmodel import Session, SQLModel, col, select

from harness.errors import HarnessError, StoreConflict
from harness.store import in_flight
from harness.store.engine import make_engine, read_only_sqlite, sqlite_path
from harness.store.migrations import MIGRATIONS, SCHEMA_VERSION
from harness.store.missing import refuse_missing
from harness.store.queries import RunRows, run_rows
from harness.store.statements import insert_ignoring
from harness.store.tables import (
    Attempt,
    AttemptRow,
    Blob,
    Run,
    SchemaVersion,
    TrajectoryEvent,
    Trial,
    TrialKey,
    TrialRow,
    table_of,
)
from harness.trajectory import Event

DEFAULT_URL = "sqlite:///.harness/harness.db"
ENV_VAR = "HARNESS_STORE"


def resolve_url(cli: str | None = None, suite: str | None = None) -> str:
    """--store beats $HARNESS_STORE beats the suite's ``store`` beats the default file."""
    return cli or os.environ.get(ENV_VAR) or suite or DEFAULT_URL


def now() -> datetime:
    return datetime.now(UTC)


# pg_advisory_xact_lock key that serialises migrations across processes ("harness" in ASCII).
_MIGRATION_LOCK = 0x68_61_72_6E_65_73_73


class StoreUnavailable(HarnessError):
    """The store cannot be opened or written at all (bad URL, read-only file, server down)."""


class UnstorableTrial(HarnessError):
    """A trial's rows hold a value the database refuses (a bug of ours: every value a trial
    keeps should be storable); the caller stores the trial without them instead."""


class Store:
    def __init__(
        self,
        url: str | None = None,
        *,
        pool_size: int = 5,
        max_overflow: int = 5,
        create: bool = True,
    ) -> None:
        """Open (and migrate) the store at ``url``. ``pool_size``/``max_overflow`` size the
        connection pool of server databases; the URL's query parameters override them.
        ``create=False`` is for commands that only read: a store that does not exist yet
        is ``missing.StoreMissing`` and nothing (file, directory or table) is created."""
        self.url = url or resolve_url()
        self.read_only = read_only_sqlite(self.url)
        if not create:
            refuse_missing(_redact(self.url), ENV_VAR, sqlite_path(self.url))
        try:
            self.engine = make_engine(self.url, pool_size, max_overflow, self.read_only)
            if not create:
                refuse_missing(_redact(self.url), ENV_VAR, None, self.engine)
            if self.read_only:
                self._check_schema()
            else:
                self.migrate()
        except (SQLAlchemyError, OSError, ImportError) as exc:
            detail = getattr(exc, "orig", None) or exc
            raise StoreUnavailable(
                f"cannot open the store {_redact(self.url)}: {str(detail).splitlines()[0]}"
            ) from None

    @property
    def shown_url(self) -> str:
        """The URL without its password, for messages."""
        return _redact(self.url)

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> int:
        """Apply pending migrations; returns the schema version now in force.

        Safe when several processes start at once: on PostgreSQL the whole migration runs
        under a transaction-level advisory lock (the others wait, then find nothing to do);
        elsewhere a lost race (a unique violation or a busy database) is retried, and the
        retry sees the winner's schema.
        """
        for attempt in range(6):
            try:
                return self._migrate_once()
            except (IntegrityError, OperationalError):
                if attempt == 5:
                    raise
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def _check_schema(self) -> None:
        """A read-only store cannot be migrated: it must already hold this schema."""
        try:
            with self.engine.connect() as conn:
                current = conn.execute(select(func.max(SchemaVersion.version))).scalar() or 0
        except OperationalError as exc:
            raise StoreUnavailable(
                f"cannot read the read-only store {_redact(self.url)}: "
                f"{str(exc.orig).splitlines()[0]}"
            ) from None
        if current < SCHEMA_VERSION:
            raise StoreUnavailable(
                f"the read-only store {_redact(self.url)} has schema {current}, older than "
                f"{SCHEMA_VERSION}; open it writable once to migrate it"
            )

    def _migrate_once(self) -> int:
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            table_of(SchemaVersion).create(conn, checkfirst=True)
            current = conn.execute(select(func.max(SchemaVersion.version))).scalar() or 0
            for version, step in MIGRATIONS:
                if version > current:
                    step(conn)
                    conn.execute(
                        table_of(SchemaVersion).insert().values(version=version, applied_at=now())
                    )
                    current = version
        return current

    # -- runs ---------------------------------------------------------------------------
    def create_run(self, run: Run) -> None:
        with self._unavailable_as_error("record the run"), Session(self.engine) as s:
            s.add(run)
            s.commit()

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self._unavailable_as_error("update the run"), Session(self.engine) as s:
            run = s.get(Run, run_id)
            if run is None:
                raise KeyError(run_id)
            for k, v in fields.items():
                setattr(run, k, v)
            s.add(run)
            s.commit()

    # -- space held back for the end of a run -------------------------------------------
    RESERVE_BYTES = 512 * 1024

    def reserve_space(self) -> None:
        """Hold back a little disk beside a SQLite store while a run writes it, so that when
        the disk fills up, freeing it lets the run row still be marked ``failed``."""
        path = sqlite_path(self.url)
        if path is None or self.read_only:
            return
        from harness.ownership import pid_alive

        for old in Path(path).parent.glob(f"{Path(path).name}.reserve-*"):
            pid = old.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not pid_alive(int(pid)):  # left by a killed run
                with contextlib.suppress(OSError):
                    old.unlink()
        reserve = Path(f"{path}.reserve-{os.getpid()}")
        self._reserve: Path | None = reserve
        with contextlib.suppress(OSError), open(reserve, "wb") as f:
            f.write(b"\0" * self.RESERVE_BYTES)
            f.flush()
            os.fsync(f.fileno())

    def release_space(self) -> None:
        """Give the held-back disk back (on a full disk, and when the run ends)."""
        reserve = getattr(self, "_reserve", None)
        if reserve is not None:
            with contextlib.suppress(OSError):
                reserve.unlink()
            self._reserve = None

    def claim_run(self, run_id: str, pid: int, host: str, owner_pid: int, owner_host: str) -> bool:
        """Take over a run for a resume, atomically: only if it is still owned by
        (``owner_pid``, ``owner_host``), the owner this process found gone. Two processes
        resuming one run at once: exactly one wins."""
        with self._unavailable_as_error("claim the run"), self.engine.begin() as conn:
            table = table_of(Run)
            done = conn.execute(
                table.update()
                .where(table.c.id == run_id, table.c.pid == owner_pid, table.c.host == owner_host)
                .values(pid=pid, host=host, status="running")
            )
            return done.rowcount == 1

    @contextlib.contextmanager
    def _unavailable_as_error(self, what: str) -> Iterator[None]:
        """A locked, read-only, full or unreachable store is one clear error, not a traceback."""
        if self.read_only:
            raise StoreUnavailable(f"cannot {what}: the store {_redact(self.url)} is read-only")
        try:
            yield
        except OperationalError as exc:
            raise StoreUnavailable(
                f"cannot {what} in the store {_redact(self.url)}: {str(exc.orig).splitlines()[0]}"
            ) from None

    def get_run(self, run_id: str) -> Run | None:
        with Session(self.engine) as s:
            return s.get(Run, run_id)

    def latest_run(self, skip: int = 0) -> Run | None:
        """The newest run, or the one ``skip`` runs before it (``latest~skip``)."""
        with Session(self.engine) as s:
            q = select(Run).order_by(col(Run.started_at).desc()).offset(skip).limit(1)
            return s.exec(q).first()

    def list_runs(self, suite: str | None = None, limit: int = 50) -> list[Run]:
        with Session(self.engine) as s:
            q = select(Run).order_by(col(Run.started_at).desc()).limit(limit)
            if suite:
                q = q.where(Run.suite_name == suite)
            return list(s.exec(q))

    # -- trials -------------------------------------------------------------------------
    def write_trial(
        self,
        trial: TrialRow | Mapping[str, object],
        attempts: Iterable[AttemptRow | Mapping[str, object]] = (),
        events: Iterable[Event | Mapping[str, object]] = (),
        blobs: dict[str, bytes] | None = None,
    ) -> int:
        """Write one finished trial with its attempts, events and blobs in ONE transaction.

        Rows are the declared records (``TrialRow``, ``AttemptRow``, ``Event``; table models
        are records too); a plain dict is validated as one first, so a misspelt key is an
        error here instead of a column SQLAlchemy silently leaves out. They go through
        SQLAlchemy Core with cached statements: the ORM costs several times more per trial.
        """
        row = _row(TrialRow, trial)
        try:
            with self.engine.begin() as conn:
                trial_id = conn.execute(_INSERT_TRIAL, row).scalar_one()
                in_flight.unmark(conn, [row])
                attempt_rows = [_row(AttemptRow, a) for a in attempts]
                if attempt_rows:
                    conn.execute(_INSERT_ATTEMPT, attempt_rows)
                event_rows = [{**_row(Event, e), "trial_id": trial_id} for e in events]
                if event_rows:
                    conn.execute(_INSERT_EVENT, event_rows)
                if blobs:
                    # Content-addressed and shared by runs: another run may write the same
                    # blob at the same moment, so an existing row is not an error.
                    conn.execute(
                        insert_ignoring(conn.dialect.name, table_of(Blob), ["sha256"]),
                        [{"sha256": ref, "data": data} for ref, data in blobs.items()],
                    )
            return int(trial_id)
        except OperationalError as exc:
            raise self._write_failed(exc) from exc
        except OSError as exc:
            raise StoreUnavailable(f"store write failed: {exc}") from None
        except IntegrityError:
            raise
        except DBAPIError as exc:
            if isinstance(exc, InterfaceError) or exc.connection_invalidated:
                # the connection broke (a server restarting, a network cut): transient
                raise StoreConflict(f"store write failed: {_first_line(exc)}") from exc
            raise UnstorableTrial(_why(exc)) from exc
        except (StatementError, ValueError, TypeError, OverflowError, RecursionError) as exc:
            # Nothing was written (one transaction); the run must not stop for one row.
            raise UnstorableTrial(_why(exc)) from exc

    def write_attempts(self, attempts: Iterable[AttemptRow | Mapping[str, object]]) -> None:
        """Record attempts of a trial that has no final row (interrupted)."""
        rows = [_row(AttemptRow, a) for a in attempts]
        if rows:
            with self.engine.begin() as conn:
                conn.execute(_INSERT_ATTEMPT, rows)

    def end_in_flight(self, run_id: str, interrupted: Iterable[AttemptRow]) -> None:
        """The driver's orderly end of its trials: the attempts of those left unfinished
        (interrupted, or stopped by a breaker) recorded, and none of the run's trials left
        marked in flight (a mark a resume finds means the driver died)."""
        rows = [_row(AttemptRow, a) for a in interrupted]
        with self.engine.begin() as conn:
            if rows:
                conn.execute(_INSERT_ATTEMPT, rows)
            in_flight.clear(conn, run_id)

    def mark_in_flight(self, keys: Iterable[tuple[TrialKey, datetime]]) -> None:
        """Mark trials as being run since their time (``harness.store.in_flight``)."""
        try:
            with self.engine.begin() as conn:
                in_flight.mark(conn, keys)
        except (OperationalError, InterfaceError) as exc:
            raise self._write_failed(exc) from exc

    def _write_failed(self, exc: DBAPIError) -> HarnessError:
        """A full disk stops the run now (never transient); other failures are retried."""
        if not is_store_full(exc):
            return StoreConflict(f"store write failed: {_first_line(exc)}")
        self.release_space()
        return StoreUnavailable(
            f"store write failed: {_first_line(exc)} ({_redact(self.url)}); "
            "finished trials are kept"
        )

    def record_driver_deaths(self, run_id: str) -> int:
        """On resume: the attempts a dead driver cut, recorded as ``driver_died``."""
        with self._unavailable_as_error("record the cut attempts"), self.engine.begin() as conn:
            return in_flight.record_driver_deaths(conn, run_id, now())

    def has_trial(self, key: TrialKey) -> bool:
        """Is this trial's final row stored? (A write whose commit was lost may have been.)"""
        trial = table_of(Trial)
        where = [trial.c[c] == getattr(key, c) for c in in_flight.KEY]
        with self.engine.connect() as conn:
            return conn.execute(select(trial.c.id).where(*where).limit(1)).first() is not None

    def finished_keys(self, run_id: str) -> set[tuple[str, str, int, str]]:
        with Session(self.engine) as s:
            rows = s.exec(
                select(Trial.arm, Trial.task_id, Trial.trial_index, Trial.variant).where(
                    Trial.run_id == run_id
                )
            )
            return {(a, t, int(i), v) for a, t, i, v in rows}

    def trials(self, run_id: str, arm: str | None = None) -> list[Trial]:
        with Session(self.engine) as s:
            q = select(Trial).where(Trial.run_id == run_id)
            if arm:
                q = q.where(Trial.arm == arm)
            return list(s.exec(q.order_by(col(Trial.id))))

    def trial(self, trial_id: int) -> Trial | None:
        with Session(self.engine) as s:
            return s.get(Trial, trial_id)

    def events(self, trial_id: int) -> list[TrajectoryEvent]:
        with Session(self.engine) as s:
            q = select(TrajectoryEvent).where(TrajectoryEvent.trial_id == trial_id)
            return list(s.exec(q.order_by(col(TrajectoryEvent.step))))

    def attempts(self, run_id: str) -> list[Attempt]:
        with Session(self.engine) as s:
            return list(s.exec(select(Attempt).where(Attempt.run_id == run_id)))

    def blob(self, ref: str) -> bytes | None:
        with Session(self.engine) as s:
            b = s.get(Blob, ref)
            return b.data if b else None

    def run_rows(
        self,
        run_id: str,
        packed: Sequence[str],
        *,
        with_variants: bool | None = None,
        with_notes: bool = False,
    ) -> RunRows:
        """The rows the run table is read from (``harness.store.queries``)."""
        return run_rows(
            self.engine, run_id, packed, with_variants=with_variants, with_notes=with_notes
        )

    def close(self) -> None:
        self.engine.dispose()


_INSERT_TRIAL = insert(table_of(Trial)).returning(table_of(Trial).c.id)
_INSERT_ATTEMPT = insert(table_of(Attempt))
_INSERT_EVENT = insert(table_of(TrajectoryEvent))


def _first_line(exc: SQLAlchemyError) -> str:
    """The driver's own message, first line (SQLAlchemy appends the statement)."""
    return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc) else ""


def _why(exc: BaseException) -> str:
    """A short description of why a row could not be written (never raising itself: the
    statement's parameters may be what broke, and SQLAlchemy puts them in its message)."""
    cause = exc.orig if isinstance(exc, StatementError) and exc.orig is not None else exc
    try:
        detail = str(cause)[:300]
    except Exception:  # noqa: BLE001 - a message that cannot be built is left out
        detail = ""
    return f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def _row(record: type[SQLModel], obj: SQLModel | Mapping[str, object]) -> dict[str, object]:
    """The insert parameters of one row: a validated ``record``'s fields, without the id the
    database assigns (a table model is an instance of its record class)."""
    if isinstance(obj, Mapping):
        obj = record.model_validate({k: v for k, v in obj.items() if k not in _ASSIGNED})
    elif not isinstance(obj, record):
        raise TypeError(f"expected a {record.__name__}, got {type(obj).__name__}")
    return obj.model_dump(include=set(record.model_fields))


_ASSIGNED = frozenset({"id", "trial_id"})
"""Keys the database assigns; a dict row may carry them (read back from a store)."""


_FULL = ("database or disk is full", "disk i/o error", "no space left")


def is_store_full(exc: BaseException) -> bool:
    """A write failed for want of space (or a failing disk): retrying cannot help."""
    text = str(getattr(exc, "orig", exc)).lower()
    return any(marker in text for marker in _FULL)
