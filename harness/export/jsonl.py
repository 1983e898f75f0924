"""``harness export RUN --format jsonl`` and ``harness import-log``: one run as JSON lines.

Why: results must leave the store for other tools and come back without loss (another
machine, another database). Every column of every row is written, so reading a file into
any store and exporting it again gives the same bytes.

Schema, version 1 (``"format": "harness-run-log"``), one JSON object per line:

1. ``{"type": "header", "format": "harness-run-log", "version": 1, "run": RUN}``: RUN holds
   every column of the ``runs`` table (the resolved suite config included).
2. One line per finished trial, in store order: ``{"type": "trial", "trial": TRIAL,
   "attempts": [ATTEMPT...], "events": [EVENT...], "blobs": {SHA256: BASE64}}``. TRIAL is
   every column of ``trials`` but the store's own ``id`` (status, verdict, score, reason,
   grader evidence with each grader's reasons, answer, tokens, cost, latency, seed, image
   id, timings); ATTEMPT every column of ``attempts`` but ``id``; EVENT every column of
   ``trajectory_events`` but ``id`` and ``trial_id`` (in step order); ``blobs`` the full
   tool outputs the events refer to by ``blob_ref`` and the trial's kept work archive
   (``work_archive`` in its evidence); ``labels`` people's labels of the
   trial (every column of ``human_labels`` but ``id`` and ``trial_id``; absent in files
   written before labels existed); ``replaced_labels`` the labels a newer one by the same
   person replaced (every column of ``human_labels_replaced`` but ``id`` and ``trial_id``;
   absent in files written before that history was kept).
3. ``{"type": "attempts", "attempts": [ATTEMPT...]}``: attempts of trials that have no
   final row (interrupted), if any.
4. ``{"type": "pairwise", "judgements": [JUDGEMENT...]}``: the run's pairwise judgements
   between its own arms (``harness pairwise RUN``), if any: every column of
   ``pairwise_judgements`` but ``id``, ``run_id``, ``run_b``, ``trial_a`` and ``trial_b``
   (the two trials are the run's trials of ``arm_a`` and ``arm_b`` at ``task_id``,
   ``variant``, ``trial_index``), oldest first.
5. ``{"type": "pairwise_across", "judgements": [JUDGEMENT...]}``: the judgements across runs
   with this run on either side (``harness pairwise RUN_A:ARM RUN_B:ARM``), if any: every
   column but ``id``, ``trial_a`` and ``trial_b`` (``run_id``'s trial of ``arm_a`` and
   ``run_b``'s of ``arm_b``, both at ``task_id``, ``variant``, ``trial_index``), ordered by
   when they were judged. Each run's file carries them, so importing the logs of both runs,
   in either order, links them once: those whose other run the store does not hold yet wait
   for its log (``Imported.waiting`` counts them).
6. ``{"type": "end", "trials": N}``: the file is complete (a truncated file is refused).

Timestamps are ISO 8601 strings as stored (UTC, naive); bytes are base64. A reader must
refuse a ``version`` it does not know. The line kinds are declared below
(``HeaderLine``, ``TrialLine``, ``AttemptsLine``, ``PairwiseLine``, ``AcrossLine``,
``EndLine``): the writer builds them and the
reader checks each line against them, so a malformed line is one error naming its field.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Literal, NamedTuple, NotRequired, TypeVar

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from sqlalchemy import Connection, DateTime, LargeBinary, RowMapping, Select, Table, or_, select
from sqlmodel import Session, SQLModel
from typing_extensions import TypedDict  # pydantic validates it (Python < 3.12)

from harness.errors import ConfigError
from harness.store import Store
from harness.store.tables import (
    Attempt,
    Blob,
    HumanLabel,
    PairwiseJudgement,
    ReplacedLabel,
    Run,
    TrajectoryEvent,
    Trial,
    table_of,
)

FORMAT = "harness-run-log"
VERSION = 1
_KEY = ("arm", "task_id", "trial_index", "variant")
_T = TypeVar("_T")

Row = dict[str, object]
"""One table row as exported: its columns by name (the table declares them), timestamps as
ISO strings. Not a TypedDict: the tables are the one schema of a row."""

_STRICT = ConfigDict(strict=True)  # a reader must not coerce "3" into 3 trials


@with_config(_STRICT)
class HeaderLine(TypedDict):
    """The first line: what the file is, and the run row."""

    type: Literal["header"]
    format: str
    version: int
    run: Row


@with_config(_STRICT)
class TrialLine(TypedDict):
    """One finished trial with its attempts, events (in step order) and blobs."""

    type: Literal["trial"]
    trial: Row
    attempts: list[Row]
    events: list[Row]
    blobs: dict[str, str]
    """sha256 → base64 of a full tool output an event refers to by ``blob_ref``."""
    labels: NotRequired[list[Row]]
    """People's labels of the trial (``human_labels``), oldest first."""
    replaced_labels: NotRequired[list[Row]]
    """Their earlier labels, replaced (``human_labels_replaced``), oldest first."""


@with_config(_STRICT)
class AttemptsLine(TypedDict):
    """Attempts of trials that have no final row (interrupted)."""

    type: Literal["attempts"]
    attempts: list[Row]


@with_config(_STRICT)
class PairwiseLine(TypedDict):
    """The run's pairwise judgements, their trials named by arm, task, variant and index."""

    type: Literal["pairwise"]
    judgements: list[Row]


@with_config(_STRICT)
class AcrossLine(TypedDict):
    """Judgements across runs with this run on either side, both runs named in each."""

    type: Literal["pairwise_across"]
    judgements: list[Row]


@with_config(_STRICT)
class EndLine(TypedDict):
    """The last line: the file is complete."""

    type: Literal["end"]
    trials: int


_Body = TrialLine | AttemptsLine | PairwiseLine | AcrossLine | EndLine
_BODY: TypeAdapter[_Body] = TypeAdapter(Annotated[_Body, Field(discriminator="type")])
_PAIRWISE_OWN = ("id", "run_id", "run_b", "trial_a", "trial_b")
"""Columns of a pairwise judgement the importing store assigns or derives (a file holds
only judgements within its run there: ``run_b`` is NULL)."""
_ACROSS_OWN = ("id", "trial_a", "trial_b")
_ACROSS_ORDER = (
    *("judged_at", "run_id", "run_b", "setup", "arm_a", "arm_b"),
    *("task_id", "variant", "trial_index", "shown_first"),
)
"""A judgement across runs' place in a file: the same in every store (ids are not)."""
_HEADER = TypeAdapter(HeaderLine)


def _archive(trial: Row) -> set[str]:
    """The trial's kept work archive blob (``work_archive`` in its evidence), if any."""
    evidence = trial.get("evidence")
    if isinstance(evidence, str):
        evidence = json.loads(evidence)
    kept = evidence.get("work_archive") if isinstance(evidence, dict) else None
    blob = kept.get("blob") if isinstance(kept, dict) else None
    return {str(blob)} if blob else set()


def _out(row: RowMapping) -> Row:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def _in(table: type[SQLModel], row: Mapping[str, object]) -> Row:
    """A JSON row back to column values (timestamps and bytes by the column's type)."""
    out = dict(row)
    for col in table_of(table).columns:
        value = out.get(col.name)
        if value is None:
            continue
        kind = getattr(col.type, "impl", col.type)  # a TypeDecorator wraps the base type
        kind = kind if isinstance(kind, type) else type(kind)
        if issubclass(kind, DateTime) and isinstance(value, str):
            out[col.name] = datetime.fromisoformat(value)
        elif issubclass(kind, LargeBinary) and isinstance(value, str):
            out[col.name] = base64.b64decode(value)
    return out


def _line(where: str, number: int, adapter: TypeAdapter[_T], item: object, tagged: bool) -> _T:
    """``item`` checked against its declared line type, or one line naming the line and field
    (``tagged``: a body line, whose error paths start with its ``type``)."""
    try:
        return adapter.validate_python(item)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"][1 if tagged else 0 :])
        raise ConfigError(where, field, err["msg"].lower(), number) from None


def export_lines(store: Store, run_id: str) -> Iterator[str]:
    """The run as JSON lines (without newlines), streamed from the store."""
    run_t, trial_t = table_of(Run), table_of(Trial)
    att_t, ev_t, blob_t = table_of(Attempt), table_of(TrajectoryEvent), table_of(Blob)
    with store.engine.connect() as conn:
        run = conn.execute(select(run_t).where(run_t.c.id == run_id)).mappings().first()
        if run is None:
            raise ConfigError("RUN", "run_id", f"no run '{run_id}' in the store")
        header: HeaderLine = {
            "type": "header",
            "format": FORMAT,
            "version": VERSION,
            "run": _out(run),
        }
        yield json.dumps(header)
        attempts: dict[tuple[object, ...], list[Row]] = defaultdict(list)
        for a in conn.execute(
            select(att_t).where(att_t.c.run_id == run_id).order_by(att_t.c.id)
        ).mappings():
            row = _out(a)
            row.pop("id")
            attempts[tuple(row[k] for k in _KEY)].append(row)
        events: dict[object, list[Row]] = defaultdict(list)
        trial_ids = select(trial_t.c.id).where(trial_t.c.run_id == run_id)
        for e in conn.execute(
            select(ev_t)
            .where(ev_t.c.trial_id.in_(trial_ids))
            .order_by(ev_t.c.trial_id, ev_t.c.step, ev_t.c.id)
        ).mappings():
            row = _out(e)
            row.pop("id")
            events[row.pop("trial_id")].append(row)
        labels = _by_trial(conn, table_of(HumanLabel), trial_ids)
        replaced = _by_trial(conn, table_of(ReplacedLabel), trial_ids)
        n = 0
        for t in conn.execute(
            select(trial_t).where(trial_t.c.run_id == run_id).order_by(trial_t.c.id)
        ).mappings():
            row = _out(t)
            trial_id = row.pop("id")
            evs = events.pop(trial_id, [])
            refs = sorted({str(e["blob_ref"]) for e in evs if e.get("blob_ref")} | _archive(row))
            blobs: dict[str, str] = {}
            if refs:
                for b in conn.execute(select(blob_t).where(blob_t.c.sha256.in_(refs))):
                    blobs[b.sha256] = base64.b64encode(b.data).decode()
            trial: TrialLine = {
                "type": "trial",
                "trial": row,
                "attempts": attempts.pop(tuple(row[k] for k in _KEY), []),
                "events": evs,
                "blobs": blobs,
                "labels": labels.pop(trial_id, []),
                "replaced_labels": replaced.pop(trial_id, []),
            }
            yield json.dumps(trial)
            n += 1
        left = [a for rows in attempts.values() for a in rows]
        if left:
            rest: AttemptsLine = {"type": "attempts", "attempts": left}
            yield json.dumps(rest)
        pw_t = table_of(PairwiseJudgement)
        judged = [
            {k: v for k, v in _out(j).items() if k not in _PAIRWISE_OWN}
            for j in conn.execute(
                select(pw_t)
                .where(pw_t.c.run_id == run_id, pw_t.c.run_b.is_(None))
                .order_by(pw_t.c.id)
            ).mappings()
        ]
        if judged:
            pairwise: PairwiseLine = {"type": "pairwise", "judgements": judged}
            yield json.dumps(pairwise)
        across = _across_rows(conn, run_id)
        if across:
            line: AcrossLine = {"type": "pairwise_across", "judgements": across}
            yield json.dumps(line)
        end: EndLine = {"type": "end", "trials": n}
        yield json.dumps(end)


def _across_rows(conn: Connection, run_id: str) -> list[Row]:
    """The judgements across runs with ``run_id`` on either side, as a file holds them."""
    pw_t = table_of(PairwiseJudgement)
    side = or_(pw_t.c.run_id == run_id, pw_t.c.run_b == run_id)
    keys = [k for k in PairwiseJudgement.model_fields if k not in _ACROSS_OWN]  # not as
    # stored: a migrated store has run_b last, a new one after trial_b
    rows = [
        {k: row[k] for k in keys}
        for row in map(
            _out, conn.execute(select(pw_t).where(pw_t.c.run_b.is_not(None), side)).mappings()
        )
    ]
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in _ACROSS_ORDER))


def _by_trial(conn: Connection, table: Table, trial_ids: Select) -> dict[object, list[Row]]:
    """A per-trial table's rows of the run's trials, by trial id, oldest first (without
    ``id`` and ``trial_id``)."""
    out: dict[object, list[Row]] = defaultdict(list)
    for r in conn.execute(
        select(table).where(table.c.trial_id.in_(trial_ids)).order_by(table.c.id)
    ).mappings():
        row = _out(r)
        row.pop("id")
        out[row.pop("trial_id")].append(row)
    return out


def write_jsonl(store: Store, run_id: str, out: IO[str]) -> int:
    """Write the run to ``out``; returns the number of trials."""
    n = 0
    for line in export_lines(store, run_id):
        out.write(line + "\n")
        n += line.startswith('{"type": "trial"')
    return n


class Imported(NamedTuple):
    """What ``import_jsonl`` read."""

    run_id: str
    trials: int
    waiting: dict[str, int]
    """Other run -> judgements across runs that wait for its log (the store lacks it)."""


def import_jsonl(store: Store, path: Path) -> Imported:
    """Read a run log into ``store``. Refuses a run id the store already holds, an unknown
    format or version, and a truncated file, with one line that names the file and line."""
    where = str(path)
    with path.open() as fh:
        first = fh.readline()
        try:
            first_item = json.loads(first)
        except ValueError:
            raise ConfigError(where, "line 1", "not a JSON line") from None
        if not isinstance(first_item, dict) or first_item.get("format") != FORMAT:
            raise ConfigError(where, "line 1", f"not a {FORMAT} file")
        if first_item.get("version") != VERSION:
            raise ConfigError(
                where,
                "line 1",
                f"version {first_item.get('version')} (this harness reads {VERSION})",
            )
        header = _line(where, 1, _HEADER, first_item, tagged=False)
        run = Run.model_validate(_in(Run, header["run"]))
        run_id = run.id  # the row object expires once written
        if store.get_run(run_id) is not None:
            raise ConfigError(where, "run.id", f"the store already holds run '{run_id}'")
        store.create_run(run)
        trials, ended, waiting = 0, None, dict[str, int]()
        for number, text in enumerate(fh, start=2):
            try:
                raw = json.loads(text)
            except ValueError:
                raise ConfigError(where, f"line {number}", "not a JSON line") from None
            kind = raw.get("type") if isinstance(raw, dict) else None
            if kind not in ("trial", "attempts", "pairwise", "pairwise_across", "end"):
                raise ConfigError(where, f"line {number}", f"unknown line type {kind!r}")
            item = _line(where, number, _BODY, raw, tagged=True)
            if item["type"] == "trial":
                trial_id = store.write_trial(
                    _in(Trial, item["trial"]),
                    [_in(Attempt, a) for a in item["attempts"]],
                    [_in(TrajectoryEvent, e) for e in item["events"]],
                    {k: base64.b64decode(v) for k, v in item["blobs"].items()},
                )
                _put_labels(store, trial_id, item.get("labels") or [])
                _put_replaced(store, trial_id, item.get("replaced_labels") or [])
                trials += 1
            elif item["type"] == "attempts":
                store.write_attempts([_in(Attempt, a) for a in item["attempts"]])
            elif item["type"] == "pairwise":
                _put_pairwise(store, run_id, item["judgements"], where, number)
            elif item["type"] == "pairwise_across":
                waiting = _put_across(store, run_id, item["judgements"], where, number)
            else:
                ended = item["trials"]
        if ended != trials:
            raise ConfigError(
                where, "end", f"truncated: {trials} trials read, end line says {ended}"
            )
    return Imported(run_id, trials, waiting)


def _put_labels(store: Store, trial_id: int, labels: list[Row]) -> None:
    from harness.store.labels import LabelIn, put_labels

    for lab in labels:
        row = _in(HumanLabel, lab)
        put_labels(
            store.engine,
            [
                LabelIn(
                    trial_id=trial_id,
                    passed=bool(row["passed"]),
                    labeller=str(row["labeller"]),
                    criterion=str(row.get("criterion", "")),
                    note=str(row.get("note", "")),
                    source=str(row.get("source", "")),
                )
            ],
            row["labelled_at"],
        )


def _put_replaced(store: Store, trial_id: int, rows: list[Row]) -> None:
    if not rows:
        return
    with Session(store.engine) as s:
        for lab in rows:
            s.add(ReplacedLabel.model_validate({**_in(ReplacedLabel, lab), "trial_id": trial_id}))
        s.commit()


def _put_pairwise(store: Store, run_id: str, rows: list[Row], where: str, number: int) -> None:
    """The run's pairwise judgements, each tied to the trials (already imported) of its two
    arms at its task, variant and trial index."""
    ids: dict[tuple[object, ...], int | None] = {
        (t.arm, t.task_id, t.variant, t.trial_index): t.id for t in store.trials(run_id)
    }
    with Session(store.engine) as s:
        for k, row in enumerate(rows):
            cell = (row.get("task_id"), row.get("variant", ""), row.get("trial_index"))
            a, b = ids.get((row.get("arm_a"), *cell)), ids.get((row.get("arm_b"), *cell))
            if a is None or b is None:
                raise ConfigError(
                    where, f"judgements[{k}]", "names a trial the file does not hold", number
                )
            values = {**_in(PairwiseJudgement, row), "run_id": run_id, "trial_a": a, "trial_b": b}
            s.add(PairwiseJudgement.model_validate(values))
        s.commit()


def _put_across(
    store: Store, run_id: str, rows: list[Row], where: str, number: int
) -> dict[str, int]:
    """Link the judgements across runs whose other run the store holds (this run is new
    to the store, so none is there yet); count, per other run, those that wait for it."""
    ids: dict[str, dict[tuple[object, ...], int | None]] = {}

    def trial(run: str, arm: object, cell: tuple[object, ...]) -> int | None:
        if run not in ids:
            ids[run] = {
                (t.arm, t.task_id, t.variant, t.trial_index): t.id for t in store.trials(run)
            }
        return ids[run].get((arm, *cell))

    waiting: dict[str, int] = {}
    with Session(store.engine) as s:
        for k, row in enumerate(rows):
            ra, rb = str(row.get("run_id")), str(row.get("run_b"))
            if run_id not in (ra, rb) or ra == rb:
                raise ConfigError(
                    where, f"judgements[{k}]", f"is not a judgement across run {run_id}", number
                )
            other = rb if ra == run_id else ra
            if store.get_run(other) is None:
                waiting[other] = waiting.get(other, 0) + 1
                continue
            cell = (row.get("task_id"), row.get("variant", ""), row.get("trial_index"))
            a, b = trial(ra, row.get("arm_a"), cell), trial(rb, row.get("arm_b"), cell)
            if a is None or b is None:
                raise ConfigError(
                    where, f"judgements[{k}]", "names a trial neither side's run holds", number
                )
            values = {**_in(PairwiseJudgement, row), "trial_a": a, "trial_b": b}
            s.add(PairwiseJudgement.model_validate(values))
        s.commit()
    return waiting
