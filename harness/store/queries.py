"""The report's queries: one run's trials and attempts as raw rows, packed per task.

A report over a million trial rows is dominated by moving rows out of the database: turning
each trial into a Python tuple of Python floats costs more than the statistics. So the
per-trial numbers leave the database *packed*, one row per (arm, task):

* one *task* query per arm groups the original (non-variant) trials by task and returns each
  task's labels (cluster, class, stratum, weight), its trial count, token sums, and every
  per-trial column the statistics need as one comma-separated text of integers
  (``group_concat`` in SQLite, ``string_agg`` in PostgreSQL), which numpy parses in C.
  All aggregates of a group see its rows in the same order, so the i-th number of every
  packed column belongs to the same trial. Floats travel as scaled integers: latency to the
  microsecond, cost to 1e-12 USD, confidence and harm severity to 1e-6 (rounded; far below
  any reported digit). Unknown confidence and cost travel as -1 and come back as NaN.
  Unknown tokens (no usage reported) are left out of the token sums, which therefore cover
  the trials with known usage; ``usage_known`` (1/0 per trial) says which those are.
* one *attempt* query counts attempts per (arm, outcome), for the crash rate;
* variant trials are fetched (paired with their original trial) only when the run has any.

Every column is named through the table models (``column_name``), so the SQL cannot name a
column the tables do not declare. All queries go through the engine's raw DBAPI connection
(sqlite3 or psycopg), side by side in worker threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy.engine import Engine

from harness import errors
from harness.store.tables import Attempt, Run, Trial
from harness.store.tables import column_name as _c

STATUS_CODES = {s: i for i, s in enumerate(errors.STATUSES)}
"""Trial status → small integer code (order of ``errors.STATUSES``); unknown → harness_error."""


class Packed(NamedTuple):
    """One per-trial column of the task query: its name in the report data, the integer SQL
    expression that carries it, and the scale that turns the integer back into the value."""

    name: str
    sql: str
    scale: float | None


def _packed_columns() -> tuple[list[Packed], list[Packed]]:
    status, steps, confidence = _c(Trial.status), _c(Trial.steps), _c(Trial.confidence)
    latency, cost, harm = _c(Trial.latency_s), _c(Trial.cost_usd), _c(Trial.harm_severity)
    tokens_in = _c(Trial.tokens_in)
    harness_error = STATUS_CODES[errors.HARNESS_ERROR]
    cases = " ".join(f"WHEN '{name}' THEN {code}" for name, code in STATUS_CODES.items())
    # Every expression is non-NULL: the aggregates skip NULLs, which would shift the columns.
    stats = [
        Packed("status", f"CASE {status} {cases} ELSE {harness_error} END", None),
        Packed("steps", f"COALESCE({steps}, 0)", None),
        Packed("confidence", f"ROUND(COALESCE({confidence}, -1.0) * 1e6)", 1e6),
        Packed("latency", f"ROUND(COALESCE({latency}, 0.0) * 1e6)", 1e6),
        Packed("cost", f"ROUND(COALESCE({cost}, -1.0) * 1e12)", 1e12),
        Packed("harm", f"ROUND(COALESCE({harm}, 0.0) * 1e6)", 1e6),
        Packed("usage_known", f"CASE WHEN {tokens_in} IS NULL THEN 0 ELSE 1 END", None),
    ]
    pairing = [
        Packed("trial_index", _c(Trial.trial_index), None),
        Packed("seed", _c(Trial.seed), None),
    ]
    return stats, pairing


PACKED, PACKED_PAIRING = _packed_columns()

_TRIALS, _ATTEMPTS = Trial.__tablename__, Attempt.__tablename__
_RUN, _ARM, _TASK, _VARIANT = _c(Trial.run_id), _c(Trial.arm), _c(Trial.task_id), _c(Trial.variant)
_STATUS, _INDEX = _c(Trial.status), _c(Trial.trial_index)

TASK_FIELDS = (
    "arm",
    "task_id",
    "cluster",
    "task_class",
    "stratum",
    "weight",
    "n",
    "tokens_in",
    "tokens_cached",
    "tokens_out",
    "image_min",
    "image_max",
    "graders_min",
    "graders_max",
)
"""The leading columns of a task row, in order; the packed columns follow them."""
_TASK_SQL = f"""
SELECT {_ARM}, {_TASK}, MIN({_c(Trial.cluster)}), MIN({_c(Trial.task_class)}),
       MIN({_c(Trial.stratum)}), MIN({_c(Trial.weight)}), COUNT(*),
       COALESCE(SUM({_c(Trial.tokens_in)}), 0), COALESCE(SUM({_c(Trial.tokens_cached)}), 0),
       COALESCE(SUM({_c(Trial.tokens_out)}), 0),
       MIN({_c(Trial.image_id)}), MAX({_c(Trial.image_id)}),
       MIN(CAST({_c(Trial.grader_versions)} AS TEXT)),
       MAX(CAST({_c(Trial.grader_versions)} AS TEXT)){{packed}}
FROM {_TRIALS} WHERE {_RUN} = {{p}} AND {_ARM} = {{p}} AND {_VARIANT} = ''
GROUP BY {_ARM}, {_TASK} ORDER BY {_TASK}
"""
_ARMS_SQL = f"SELECT {_c(Run.arms)} FROM {Run.__tablename__} WHERE {_c(Run.id)} = {{p}}"
_ATTEMPT_SQL = f"""
SELECT {_c(Attempt.arm)}, {_c(Attempt.outcome)}, COUNT(*), SUM({_c(Attempt.cost_usd)}),
       COUNT({_c(Attempt.cost_usd)}),
       SUM(CASE WHEN {_c(Attempt.attempt)} = 2 THEN 1 ELSE 0 END) FROM {_ATTEMPTS}
WHERE {_c(Attempt.run_id)} = {{p}} GROUP BY {_c(Attempt.arm)}, {_c(Attempt.outcome)}
"""
_HAS_VARIANTS_SQL = f"SELECT 1 FROM {_TRIALS} WHERE {_RUN} = {{p}} AND {_VARIANT} <> '' LIMIT 1"
_VARIANT_SQL = f"""
SELECT v.{_ARM}, v.{_TASK}, v.{_VARIANT}, v.{_INDEX}, v.{_STATUS}, o.{_STATUS}
FROM {_TRIALS} v JOIN {_TRIALS} o
  ON o.{_RUN} = v.{_RUN} AND o.{_ARM} = v.{_ARM} AND o.{_TASK} = v.{_TASK}
 AND o.{_INDEX} = v.{_INDEX} AND o.{_VARIANT} = ''
WHERE v.{_RUN} = {{p}} AND v.{_VARIANT} <> ''
"""
"""Variant trials, each with the status of the original trial of its (arm, task, index)."""


@dataclass
class ReportRows:
    """One run's rows as the report's queries return them (see the module docstring)."""

    task_rows: list[tuple[Any, ...]]
    """Per (arm, task): ``TASK_FIELDS`` then one packed text per entry of ``packed``."""
    packed: list[Packed]
    attempts: list[tuple[str, str, int, float, int, int]]
    """(arm, outcome, count, summed known cost in US dollars, attempts with a known cost,
    second attempts: one per trial that was retried)."""
    variants: list[tuple[Any, ...]]
    """(arm, task, variant, trial index, status, original trial's status)."""
    timings: dict[str, float] = field(default_factory=dict)


def report_rows(
    engine: Engine, run_id: str, *, with_variants: bool | None, with_pairing: bool
) -> ReportRows:
    """Run the report's queries for ``run_id``, side by side.

    ``with_variants``: True/False if the caller knows whether the run scheduled variant
    trials; None asks the store. ``with_pairing``: also pack each trial's index and seed.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    paramstyle = engine.dialect.paramstyle
    agg = "string_agg" if engine.dialect.name == "postgresql" else "group_concat"
    columns = PACKED + (PACKED_PAIRING if with_pairing else [])
    packed = "".join(
        f",\n       {agg}(CAST(CAST({c.sql} AS BIGINT) AS TEXT), ',')" for c in columns
    )
    timing_lock = threading.Lock()

    def query(name: str, sql: str, fetch: Callable[[Any], Any], *params: str) -> Any:
        """One query on a pooled connection of its own (queries run in worker threads)."""
        t = time.perf_counter()
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            try:
                marker = "?" if paramstyle == "qmark" else "%s"
                cur.execute(sql.format(p=marker, packed=packed), params)
                return fetch(cur)
            finally:
                cur.close()
        finally:
            raw.close()
            with timing_lock:  # summed over the per-arm queries
                key = f"{name}_query_s"
                timings[key] = timings.get(key, 0.0) + time.perf_counter() - t

    def all_rows(cur: Any) -> list[tuple[Any, ...]]:
        return list(cur.fetchall())

    def one_row(cur: Any) -> tuple[Any, ...] | None:
        row = cur.fetchone()
        return tuple(row) if row is not None else None

    arm_names = _arms_of_run(query("arms", _ARMS_SQL, one_row, run_id))
    if with_variants is None:
        with_variants = query("has_variant", _HAS_VARIANTS_SQL, one_row, run_id) is not None
    # One grouped query per arm plus the attempt and variant queries, side by side: the
    # database does the work with the GIL released, so they overlap on several cores.
    with ThreadPoolExecutor(max_workers=_parallel_queries(engine, len(arm_names) + 2)) as pool:
        per_arm = {
            arm: pool.submit(query, "task", _TASK_SQL, all_rows, run_id, arm) for arm in arm_names
        }
        attempt_rows = pool.submit(query, "attempt", _ATTEMPT_SQL, all_rows, run_id)
        variant_rows = (
            pool.submit(query, "variant", _VARIANT_SQL, all_rows, run_id) if with_variants else None
        )
        attempts = [
            (str(a), str(o), int(n), float(usd or 0.0), int(known), int(second or 0))
            for a, o, n, usd, known, second in attempt_rows.result()
        ]
        # Trials of arms the run row lacks still count.
        for arm in sorted({a[0] for a in attempts} - set(per_arm)):
            per_arm[arm] = pool.submit(query, "task", _TASK_SQL, all_rows, run_id, arm)
        task_rows = [row for arm in sorted(per_arm) for row in per_arm[arm].result()]
        variants = variant_rows.result() if variant_rows is not None else []
    timings["queries_s"] = time.perf_counter() - t0
    return ReportRows(task_rows, columns, attempts, variants, timings)


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
