"""Store → column arrays for the report, with a few raw SQL queries and no ORM objects.

A report over a million trial rows is dominated by moving rows out of the database: turning
each trial into a Python tuple of Python floats costs more than the statistics. So the
per-trial numbers leave the database *packed*, one row per (arm, task):

* one *task* query groups the original (non-variant) trials by (arm, task) and returns each
  task's labels (cluster, class, stratum, weight), its trial count, token sums, and every
  per-trial column the statistics need as one comma-separated text of integers
  (``group_concat`` in SQLite, ``string_agg`` in PostgreSQL), which numpy parses in C.
  All aggregates of a group see its rows in the same order, so the i-th number of every
  packed column belongs to the same trial. Floats travel as scaled integers: latency to the
  microsecond, cost to 1e-12 USD, confidence and harm severity to 1e-6 (rounded; far below
  any reported digit). Unknown confidence and cost travel as -1 and come back as NaN.
* one *attempt* query counts attempts per (arm, outcome), for the crash rate;
* variant trials are fetched (paired with their original trial) only when the run has any.

All queries go through the engine's raw DBAPI connection (sqlite3 or psycopg).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness import errors

STATUS_CODES = {s: i for i, s in enumerate(errors.STATUSES)}
"""Trial status → small integer code (order of ``errors.STATUSES``); unknown → harness_error."""
PASSED_CODE = STATUS_CODES[errors.PASSED]
FAILED_CODE = STATUS_CODES[errors.FAILED]

_STATUS_CASE = (
    "CASE status "
    + " ".join(f"WHEN '{name}' THEN {code}" for name, code in STATUS_CODES.items())
    + f" ELSE {STATUS_CODES[errors.HARNESS_ERROR]} END"
)
# (name, SQL integer expression, scale): one packed per-trial column each.
_PACKED = [
    ("status", _STATUS_CASE, None),
    ("steps", "COALESCE(steps, 0)", None),
    ("confidence", "ROUND(COALESCE(confidence, -1.0) * 1e6)", 1e6),
    ("latency", "ROUND(COALESCE(latency_s, 0.0) * 1e6)", 1e6),
    ("cost", "ROUND(COALESCE(cost_usd, -1.0) * 1e12)", 1e12),
    ("harm", "ROUND(COALESCE(harm_severity, 0.0) * 1e6)", 1e6),
]
"""Every expression is non-NULL: the aggregates skip NULLs, which would shift the columns."""
_PACKED_PAIRING = [("trial_index", "trial_index", None), ("seed", "seed", None)]
_TASK_SQL = """
SELECT arm, task_id, MIN(cluster), MIN(task_class), MIN(stratum), MIN(weight), COUNT(*),
       SUM(tokens_in), SUM(tokens_cached), SUM(tokens_out),
       MIN(image_id), MAX(image_id),
       MIN(CAST(grader_versions AS TEXT)), MAX(CAST(grader_versions AS TEXT)){packed}
FROM trials WHERE run_id = {p} AND arm = {p} AND variant = ''
GROUP BY arm, task_id ORDER BY task_id
"""
_ARMS_SQL = "SELECT arms FROM runs WHERE id = {p}"
_PACKED_FIRST = 14  # index of the first packed column in a task row
_ATTEMPT_SQL = """
SELECT arm, outcome, COUNT(*) FROM attempts WHERE run_id = {p} GROUP BY arm, outcome
"""
_HAS_VARIANTS_SQL = "SELECT 1 FROM trials WHERE run_id = {p} AND variant <> '' LIMIT 1"
_VARIANT_SQL = """
SELECT v.arm, v.task_id, v.variant, v.trial_index, v.status, o.status
FROM trials v JOIN trials o
  ON o.run_id = v.run_id AND o.arm = v.arm AND o.task_id = v.task_id
 AND o.trial_index = v.trial_index AND o.variant = ''
WHERE v.run_id = {p} AND v.variant <> ''
"""


@dataclass
class ArmTrials:
    """One arm's original (non-variant) trials as arrays.

    Task arrays have one entry per task (sorted by task id); trial arrays one entry per trial,
    with ``task_index`` mapping each trial to its task.
    """

    tasks: np.ndarray
    clusters: np.ndarray
    classes: np.ndarray
    strata: np.ndarray
    """Stratum label per task; None where undeclared (object array)."""
    weights: np.ndarray
    tokens: np.ndarray
    """Per-task sums, shape (n_tasks, 3): tokens in, cached, out."""
    task_index: np.ndarray
    status: np.ndarray
    """Status code per trial (``STATUS_CODES``)."""
    confidence: np.ndarray
    """Stated confidence per trial; NaN when the agent gave none."""
    latency: np.ndarray
    steps: np.ndarray
    cost: np.ndarray
    """US dollars per trial; NaN when the price was unknown."""
    harm: np.ndarray
    trial_index: np.ndarray
    seed: np.ndarray
    image_ids: set[str] = field(default_factory=set)
    grader_versions: list[str] = field(default_factory=list)
    """Distinct grader_versions JSON texts seen on this arm's trials."""

    @property
    def n_trials(self) -> int:
        return int(self.status.size)


@dataclass
class VariantPairs:
    """Variant trials paired with the original trial of the same (arm, task, trial index)."""

    task: np.ndarray
    variant: np.ndarray
    trial_index: np.ndarray
    status: np.ndarray
    """Status code of the variant trial."""
    original_status: np.ndarray


@dataclass
class RunData:
    """Everything the report reads from the store for one run."""

    arms: dict[str, ArmTrials]
    attempts: dict[str, dict[str, int]]
    """arm → attempt outcome → count."""
    variants: dict[str, VariantPairs]
    timings: dict[str, float] = field(default_factory=dict)


def _execute(conn, paramstyle: str, sql: str, *params: str, **parts: str):
    marker = "?" if paramstyle == "qmark" else "%s"
    cur = conn.cursor()
    cur.execute(sql.format(p=marker, **parts), params)
    return cur


def _empty_arm() -> ArmTrials:
    f = np.empty(0, dtype=float)
    i = np.empty(0, dtype=np.int64)
    o = np.empty(0, dtype=object)
    return ArmTrials(
        tasks=o,
        clusters=o,
        classes=o,
        strata=o,
        weights=f,
        tokens=np.zeros((0, 3)),
        task_index=i,
        status=np.empty(0, dtype=np.int8),
        confidence=f,
        latency=f,
        steps=f,
        cost=f,
        harm=f,
        trial_index=i,
        seed=i,
    )


def _status_codes(values) -> np.ndarray:
    harness_error = STATUS_CODES[errors.HARNESS_ERROR]
    get = STATUS_CODES.get
    return np.fromiter((get(s, harness_error) for s in values), dtype=np.int8, count=len(values))


def _packed_sql(dialect: str, with_pairing: bool) -> tuple[str, list[tuple]]:
    agg = "string_agg" if dialect == "postgresql" else "group_concat"
    columns = _PACKED + (_PACKED_PAIRING if with_pairing else [])
    packed = "".join(
        f",\n       {agg}(CAST(CAST({expr} AS BIGINT) AS TEXT), ',')" for _, expr, _ in columns
    )
    return packed, columns


def _unpack(texts, n: int, name: str) -> np.ndarray:
    """One packed column (a text per task) as an int64 array of ``n`` trials."""
    values = np.fromstring(",".join(texts), dtype=np.int64, sep=",")
    if values.size != n:
        raise RuntimeError(f"the store returned an unreadable '{name}' column; report it as a bug")
    return values


def load_run_data(
    store, run_id: str, *, with_variants: bool | None = None, with_pairing: bool = True
) -> RunData:
    """Read one run's trials and attempts as arrays (see module docstring for the queries).

    ``with_variants``: True/False if the caller knows whether the run scheduled variant
    trials; None asks the store. ``with_pairing``: also read each trial's index and seed
    (needed only for the primary comparison's trial rows; else they are -1).
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = store.engine
    paramstyle = engine.dialect.paramstyle
    packed, columns = _packed_sql(engine.dialect.name, with_pairing)
    timing_lock = threading.Lock()

    def query(name: str, sql: str, fetch, *params: str, **parts: str):
        """One query on a pooled connection of its own (queries run in worker threads)."""
        t = time.perf_counter()
        raw = engine.raw_connection()
        try:
            cur = _execute(raw, paramstyle, sql, *params, **parts)
            try:
                return fetch(cur)
            finally:
                cur.close()
        finally:
            raw.close()
            with timing_lock:  # summed over the per-arm queries
                key = f"{name}_query_s"
                timings[key] = timings.get(key, 0.0) + time.perf_counter() - t

    def all_rows(cur) -> list[tuple]:
        return cur.fetchall()

    arm_names = _arms_of_run(query("arms", _ARMS_SQL, lambda c: c.fetchone(), run_id))
    if with_variants is None:
        found = query("has_variant", _HAS_VARIANTS_SQL, lambda c: c.fetchone(), run_id)
        with_variants = found is not None
    # One grouped query per arm plus the attempt and variant queries, side by side: the
    # database does the work with the GIL released, so they overlap on several cores.
    with ThreadPoolExecutor(max_workers=_parallel_queries(engine, len(arm_names) + 2)) as pool:
        per_arm = {
            arm: pool.submit(query, "task", _TASK_SQL, all_rows, run_id, arm, packed=packed)
            for arm in arm_names
        }
        attempt_rows = pool.submit(query, "attempt", _ATTEMPT_SQL, all_rows, run_id)
        variant_rows = (
            pool.submit(query, "variant", _VARIANT_SQL, all_rows, run_id) if with_variants else None
        )
        attempts: dict[str, dict[str, int]] = {}
        for arm, outcome, count in attempt_rows.result():
            attempts.setdefault(arm, {})[outcome] = int(count)
        missing_arms = sorted(set(attempts) - set(per_arm))  # trials of arms the run row lacks
        for arm in missing_arms:
            per_arm[arm] = pool.submit(
                query, "task", _TASK_SQL, all_rows, run_id, arm, packed=packed
            )
        task_rows = [row for arm in sorted(per_arm) for row in per_arm[arm].result()]
        variant_rows = variant_rows.result() if variant_rows is not None else []
    timings["queries_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    counts = np.fromiter((r[6] for r in task_rows), dtype=np.int64, count=len(task_rows))
    n_total = int(counts.sum())
    per_trial = {
        name: _unpack([r[_PACKED_FIRST + i] for r in task_rows], n_total, name)
        for i, (name, _, _) in enumerate(columns)
    }
    scaled = {name: per_trial[name] / scale for name, _, scale in columns if scale}
    missing = np.full(n_total, -1, dtype=np.int64)
    status = per_trial["status"].astype(np.int8)
    trial_index = per_trial.get("trial_index", missing)
    seeds = per_trial.get("seed", missing)
    arms: dict[str, ArmTrials] = {}
    start_task = 0
    start_trial = 0
    arm_names = [r[0] for r in task_rows]
    while start_task < len(task_rows):
        arm = arm_names[start_task]
        end_task = start_task
        while end_task < len(task_rows) and arm_names[end_task] == arm:
            end_task += 1
        rows = task_rows[start_task:end_task]
        n_per_task = counts[start_task:end_task]
        end_trial = start_trial + int(n_per_task.sum())
        sl = slice(start_trial, end_trial)
        cols = list(zip(*rows, strict=True))
        images: set[str] = set()
        for lo, hi in zip(cols[10], cols[11], strict=True):
            images.update(x for x in (lo, hi) if x)
        graders: set[str] = set()
        for lo, hi in zip(cols[12], cols[13], strict=True):
            graders.update(_as_text(x) for x in (lo, hi) if x)
        conf, lat, cost, harm = (scaled[k][sl] for k in ("confidence", "latency", "cost", "harm"))
        steps = per_trial["steps"][sl].astype(float)
        tidx, seed = trial_index[sl], seeds[sl]
        arms[arm] = ArmTrials(
            tasks=np.array(cols[1], dtype=object),
            clusters=np.array(cols[2], dtype=object),
            classes=np.array(cols[3], dtype=object),
            strata=np.array(cols[4], dtype=object),
            weights=np.array(cols[5], dtype=float),
            tokens=np.array(cols[7:10], dtype=float).T,
            task_index=np.repeat(np.arange(len(rows)), n_per_task),
            status=status[sl],
            confidence=np.where(conf < 0, np.nan, conf),
            latency=lat,
            steps=steps,
            cost=np.where(cost < 0, np.nan, cost),
            harm=harm,
            trial_index=tidx,
            seed=seed,
            image_ids=images,
            grader_versions=sorted(graders),
        )
        start_task, start_trial = end_task, end_trial

    variants: dict[str, VariantPairs] = {}
    by_arm: dict[str, list[tuple]] = {}
    for r in variant_rows:
        by_arm.setdefault(r[0], []).append(r)
    for arm, rows in by_arm.items():
        cols = list(zip(*rows, strict=True))
        variants[arm] = VariantPairs(
            task=np.array(cols[1], dtype=object),
            variant=np.array(cols[2], dtype=object),
            trial_index=np.array(cols[3], dtype=np.int64),
            status=_status_codes(cols[4]),
            original_status=_status_codes(cols[5]),
        )
    timings["arrays_s"] = time.perf_counter() - t1
    return RunData(arms=arms, attempts=attempts, variants=variants, timings=timings)


def _arms_of_run(row: tuple | None) -> list[str]:
    """The run row's arm names (JSON text on SQLite, a parsed list on PostgreSQL)."""
    if row is None or row[0] is None:
        return []
    value = row[0]
    if isinstance(value, str):
        import json

        value = json.loads(value)
    return sorted(str(a) for a in value)


def _parallel_queries(engine, wanted: int) -> int:
    """Worker threads for the loader's queries: no more than the pool can connect at once."""
    pool = engine.pool
    capacity = getattr(pool, "size", lambda: wanted)() + max(getattr(pool, "_max_overflow", 0), 0)
    return max(1, min(wanted, capacity, 4))


def _as_text(value: Any) -> str:
    """grader_versions comes back as JSON text (SQLite) or a parsed dict (PostgreSQL)."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, sort_keys=True)


def empty_arm() -> ArmTrials:
    """An arm with no trials (declared in the run but nothing finished yet)."""
    return _empty_arm()


def comparison_rows(arm: str, data: ArmTrials) -> dict[str, Any]:
    """One arm's trials as columns (task_id, cluster, task_class, weight, status,
    trial_index, seed, variant) for ``harness.release.compare.paired_comparison``: columns,
    not a dict per trial, so a million-row comparison stays vectorized."""
    ti = data.task_index
    n = len(ti)
    return {
        "task_id": data.tasks[ti],
        "cluster": data.clusters[ti],
        "task_class": data.classes[ti],
        "weight": data.weights[ti],
        "status": np.array(errors.STATUSES, dtype=object)[data.status],
        "trial_index": data.trial_index,
        "seed": data.seed,
        "variant": np.full(n, "", dtype=object),
    }
