"""The queries behind the run table (``harness.analysis.load``): one run's trials packed per
task, its attempts counted, and the texts of the trials without a verdict.

A report over a million trial rows is dominated by moving rows out of the database: turning
each trial into a Python tuple of Python floats costs more than the statistics. So the
per-trial numbers leave the database *packed*, one row per (arm, task[, variant]):

* one *group* query per arm groups the trials of the task as written by task (and, when the
  run has variants, one more groups the variant trials by task and variant) and returns each
  group's labels (cluster, class, stratum, weight, the smallest and largest image id, pairing
  image and grader versions), its trial count, and every per-trial column the caller asked
  for as one comma-separated text of integers (``group_concat`` in SQLite, ``string_agg`` in
  PostgreSQL), which numpy parses in C. All aggregates of a group see its rows in the same
  order, so the i-th number of every packed column belongs to the same trial. Floats travel
  as scaled integers: latency to the microsecond, cost to 1e-12 USD, confidence, harm
  severity and score to 1e-6 (rounded; far below any reported digit). Unknown confidence, cost
  and score travel as -1 and come back as NaN; unknown tokens as 0 with ``usage_known`` 0. The status,
  whether usage was reported, the attempt count and the steps travel as one integer
  (``status | usage_known << 3 | min(attempts, 4095) << 4 | steps << 16``): one aggregate
  instead of four.
* when a group's trials disagree on an image or grader version (its smallest and largest
  differ), one *label* query reads those three per trial, so every trial keeps its own;
* one *attempt* query counts attempts per (arm, outcome), for the crash rate and spend;
* one *note* query reads the reason and error of the trials without a verdict and of the
  failures the agent caused, for the causes the report and the HTML page list.

Every column is named through the table models (``column_name``), so the SQL cannot name a
column the tables do not declare. All queries go through the engine's raw DBAPI connection
(sqlite3 or psycopg), side by side in worker threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy.engine import Engine

from harness import errors
from harness.store.tables import Attempt, Run, Trial
from harness.store.tables import column_name as _c

STATUS_CODES = {s: i for i, s in enumerate(errors.STATUSES)}
"""Trial status → small integer code (order of ``errors.STATUSES``); unknown → harness_error."""
ATTEMPTS_CAP = 4095
"""Attempts above this travel (and read) as this many: only "more than one" is ever asked."""


class Packed(NamedTuple):
    """One per-trial column of the group query: its name in the run table, the integer SQL
    expression that carries it, and the scale that turns the integer back into the value."""

    name: str
    sql: str
    scale: float | None


def _packed_columns() -> dict[str, Packed]:
    status, steps, confidence = _c(Trial.status), _c(Trial.steps), _c(Trial.confidence)
    latency, cost, harm = _c(Trial.latency_s), _c(Trial.cost_usd), _c(Trial.harm_severity)
    tokens_in, attempts = _c(Trial.tokens_in), _c(Trial.attempts)
    harness_error = STATUS_CODES[errors.HARNESS_ERROR]
    cases = " ".join(f"WHEN '{name}' THEN {code}" for name, code in STATUS_CODES.items())
    code = f"CASE {status} {cases} ELSE {harness_error} END"
    known = f"CASE WHEN {tokens_in} IS NULL THEN 0 ELSE 1 END"
    tries = f"CASE WHEN {attempts} > {ATTEMPTS_CAP} THEN {ATTEMPTS_CAP} ELSE {attempts} END"
    small = f"{code} + 8 * {known} + 16 * {tries} + 65536 * COALESCE({steps}, 0)"
    # Every expression is non-NULL: the aggregates skip NULLs, which would shift the columns.
    columns = [
        Packed("small", small, None),
        Packed("confidence", f"ROUND(COALESCE({confidence}, -1.0) * 1e6)", 1e6),
        Packed("latency", f"ROUND(COALESCE({latency}, 0.0) * 1e6)", 1e6),
        Packed("cost", f"ROUND(COALESCE({cost}, -1.0) * 1e12)", 1e12),
        Packed("harm", f"ROUND(COALESCE({harm}, 0.0) * 1e6)", 1e6),
        Packed("score", f"ROUND(COALESCE({_c(Trial.score)}, -1.0) * 1e6)", 1e6),
        Packed("tokens_in", f"COALESCE({tokens_in}, 0)", None),
        Packed("tokens_cached", f"COALESCE({_c(Trial.tokens_cached)}, 0)", None),
        Packed("tokens_out", f"COALESCE({_c(Trial.tokens_out)}, 0)", None),
        Packed("trial_index", _c(Trial.trial_index), None),
        Packed("seed", _c(Trial.seed), None),
        Packed("id", _c(Trial.id), None),
    ]
    return {p.name: p for p in columns}


PACKED = _packed_columns()
"""Every per-trial column the group query can pack, by name."""

_TRIALS, _ATTEMPTS = Trial.__tablename__, Attempt.__tablename__
_RUN, _ARM, _TASK, _VARIANT = _c(Trial.run_id), _c(Trial.arm), _c(Trial.task_id), _c(Trial.variant)
_STATUS, _INDEX = _c(Trial.status), _c(Trial.trial_index)
_IMAGE = f"NULLIF({_c(Trial.image_id)}, '')"
_PAIR_IMAGE = f"COALESCE(NULLIF({_c(Trial.task_image_id)}, ''), {_IMAGE})"
"""The image that pairs trials of two arms: the task's image under any agent CLI layer."""
_GRADERS = f"CAST({_c(Trial.grader_versions)} AS TEXT)"

GROUP_FIELDS = (
    "task_id",
    "variant",
    "cluster",
    "task_class",
    "stratum",
    "weight",
    "n",
    "image_min",
    "image_max",
    "pair_image_min",
    "pair_image_max",
    "graders_min",
    "graders_max",
)
"""The leading columns of a group row, in order; the packed columns follow them."""
_LABELS = (_IMAGE, _PAIR_IMAGE, _GRADERS)
_GROUP_SQL = f"""
SELECT {_TASK}, {{variant}}, MIN({_c(Trial.cluster)}), MIN({_c(Trial.task_class)}),
       MIN({_c(Trial.stratum)}), MIN({_c(Trial.weight)}), COUNT(*),
       {", ".join(f"MIN({x}), MAX({x})" for x in _LABELS)}{{packed}}
FROM {_TRIALS} WHERE {_RUN} = {{p}} AND {_ARM} = {{p}} AND {{where}}
GROUP BY {{group}} ORDER BY {{group}}
"""
_ORIGINALS = {"variant": "''", "where": f"{_VARIANT} = ''", "group": f"{_ARM}, {_TASK}"}
_VARIANTS = {
    "variant": _VARIANT,
    "where": f"{_VARIANT} <> ''",
    "group": f"{_ARM}, {_TASK}, {_VARIANT}",
}
_LABEL_SQL = f"""
SELECT {_ARM}, {_TASK}, {_VARIANT}, {_INDEX}, {", ".join(_LABELS)}
FROM {_TRIALS} WHERE {_RUN} = {{p}}
"""
_ARMS_SQL = f"SELECT {_c(Run.arms)} FROM {Run.__tablename__} WHERE {_c(Run.id)} = {{p}}"
_ATTEMPT_SQL = f"""
SELECT {_c(Attempt.arm)}, {_c(Attempt.outcome)}, COUNT(*), SUM({_c(Attempt.cost_usd)}),
       COUNT({_c(Attempt.cost_usd)}),
       SUM(CASE WHEN {_c(Attempt.attempt)} = 2 THEN 1 ELSE 0 END) FROM {_ATTEMPTS}
WHERE {_c(Attempt.run_id)} = {{p}} GROUP BY {_c(Attempt.arm)}, {_c(Attempt.outcome)}
"""
_HAS_VARIANTS_SQL = f"SELECT 1 FROM {_TRIALS} WHERE {_RUN} = {{p}} AND {_VARIANT} <> '' LIMIT 1"
_NOTE_SQL = f"""
SELECT {_c(Trial.id)}, {_ARM}, {_STATUS}, {_c(Trial.failure_kind)}, {_c(Trial.reason)},
       {_c(Trial.error)}
FROM {_TRIALS} WHERE {_RUN} = {{p}}
  AND ({_STATUS} NOT IN ('{errors.PASSED}', '{errors.FAILED}') OR {_c(Trial.failure_kind)} IS NOT NULL)
ORDER BY {_c(Trial.id)}
"""


class Note(NamedTuple):
    """The texts of one trial without a verdict, or of a failure the agent caused."""

    id: int
    arm: str
    status: str
    failure_kind: str | None
    reason: str
    error: str | None


@dataclass
class RunRows:
    """One run's rows as the queries return them (see the module docstring)."""

    groups: dict[str, list[tuple[Any, ...]]]
    """Arm → group rows: ``GROUP_FIELDS`` then one packed text per entry of ``packed``; the
    task-as-written groups by task id, then the variant groups by (task id, variant)."""
    packed: list[Packed]
    labels: list[tuple[Any, ...]] | None
    """Per trial (arm, task, variant, trial index, image, pairing image, grader versions),
    read only when some group's trials disagree on one of the three; else None."""
    attempts: list[tuple[str, str, int, float, int, int]]
    """(arm, outcome, count, summed known cost in US dollars, attempts with a known cost,
    second attempts: one per trial that was retried)."""
    notes: list[Note]
    timings: dict[str, float] = field(default_factory=dict)


class _Queries:
    """Runs one query on a pooled connection of its own (queries run in worker threads),
    summing the seconds each kind of query took into ``timings``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self.timings: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, name: str, sql: str, fetch: Callable[[Any], Any], *params: str) -> Any:
        t = time.perf_counter()
        raw = self.engine.raw_connection()
        try:
            cur = raw.cursor()
            try:
                cur.execute(sql.format(p=self.mark), params)
                return fetch(cur)
            finally:
                cur.close()
        finally:
            raw.close()
            with self._lock:  # summed over the per-arm queries
                key = f"{name}_query_s"
                self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - t


def _all_rows(cur: Any) -> list[tuple[Any, ...]]:
    return list(cur.fetchall())


def _one_row(cur: Any) -> tuple[Any, ...] | None:
    row = cur.fetchone()
    return tuple(row) if row is not None else None


def run_rows(
    engine: Engine,
    run_id: str,
    packed: Iterable[str],
    *,
    with_variants: bool | None,
    with_notes: bool,
) -> RunRows:
    """Run the table's queries for ``run_id``, side by side.

    ``packed``: names of ``PACKED`` columns to read per trial. ``with_variants``: True/False
    if the caller knows whether the run scheduled variant trials; None asks the store.
    """
    t0 = time.perf_counter()
    agg = "string_agg" if engine.dialect.name == "postgresql" else "group_concat"
    columns = [PACKED[name] for name in packed]
    packed_sql = "".join(
        f",\n       {agg}(CAST(CAST({c.sql} AS BIGINT) AS TEXT), ',')" for c in columns
    )
    query = _Queries(engine)
    timings = query.timings

    def group_sql(kind: dict[str, str]) -> str:
        return _GROUP_SQL.format(packed=packed_sql, p="{p}", **kind)

    arm_names = _arms_of_run(query("arms", _ARMS_SQL, _one_row, run_id))
    if with_variants is None:
        with_variants = query("has_variant", _HAS_VARIANTS_SQL, _one_row, run_id) is not None
    kinds = [_ORIGINALS, _VARIANTS] if with_variants else [_ORIGINALS]
    # One grouped query per arm (and kind) plus the attempt and note queries, side by side:
    # the database does the work with the GIL released, so they overlap on several cores.
    with ThreadPoolExecutor(max_workers=_parallel_queries(engine, len(arm_names) + 2)) as pool:

        def groups_of(arm: str) -> list[Any]:
            return [
                pool.submit(query, "group", group_sql(k), _all_rows, run_id, arm) for k in kinds
            ]

        per_arm = {arm: groups_of(arm) for arm in arm_names}
        attempt_rows = pool.submit(query, "attempt", _ATTEMPT_SQL, _all_rows, run_id)
        note_rows = pool.submit(query, "note", _NOTE_SQL, _all_rows, run_id) if with_notes else None
        attempts = [
            (str(a), str(o), int(n), float(usd or 0.0), int(known), int(second or 0))
            for a, o, n, usd, known, second in attempt_rows.result()
        ]
        # Trials of arms the run row lacks still count.
        for arm in sorted({a[0] for a in attempts} - set(per_arm)):
            per_arm[arm] = groups_of(arm)
        groups = {
            arm: [row for part in per_arm[arm] for row in part.result()] for arm in sorted(per_arm)
        }
        notes = [
            Note(int(i), str(a), str(s), k, str(r or ""), e)
            for i, a, s, k, r, e in (note_rows.result() if note_rows is not None else [])
        ]
    labels = None
    first = GROUP_FIELDS.index("image_min")
    pairs = (first, first + 2, first + 4)  # (min, max) of image, pairing image, graders
    if any(r[i] != r[i + 1] for rows in groups.values() for r in rows for i in pairs):
        labels = query("label", _LABEL_SQL, _all_rows, run_id)
    timings["queries_s"] = time.perf_counter() - t0
    return RunRows(groups, columns, labels, attempts, notes, timings)


def _arms_of_run(row: tuple[Any, ...] | None) -> list[str]:
    """The run row's arm names (JSON text on SQLite, a parsed list on PostgreSQL)."""
    if row is None or row[0] is None:
        return []
    value = row[0]
    if isinstance(value, str):
        value = json.loads(value)
    return sorted(str(a) for a in value)


def _parallel_queries(engine: Engine, wanted: int) -> int:
    """Worker threads for the loader's queries: no more than the pool can connect at once."""
    pool = engine.pool
    capacity = getattr(pool, "size", lambda: wanted)() + max(getattr(pool, "_max_overflow", 0), 0)
    return max(1, min(wanted, capacity, 4))
