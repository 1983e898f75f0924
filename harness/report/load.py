"""Store → column arrays for the report: the store's packed rows unpacked with numpy.

The queries live with the store (``harness.store.queries``, where the packing is
explained); here each packed text becomes an int64 array and each task row's labels become
per-task arrays. No SQL here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness import errors
from harness.store.queries import STATUS_CODES, TASK_FIELDS

PASSED_CODE = STATUS_CODES[errors.PASSED]
FAILED_CODE = STATUS_CODES[errors.FAILED]
_F = {name: i for i, name in enumerate(TASK_FIELDS)}


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
    """Per-task sums over trials with known usage, shape (n_tasks, 3): in, cached, out."""
    task_index: np.ndarray
    status: np.ndarray
    """Status code per trial (``STATUS_CODES``)."""
    confidence: np.ndarray
    """Stated confidence per trial; NaN when the agent gave none."""
    latency: np.ndarray
    steps: np.ndarray
    cost: np.ndarray
    """US dollars per trial; NaN when the price or the usage was unknown."""
    harm: np.ndarray
    usage_known: np.ndarray
    """Per trial: True when its model calls reported their usage (tokens known)."""
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
    attempt_cost: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)
    """arm → attempt outcome → (summed known cost in US dollars, attempts with a known cost)."""
    retried: dict[str, int] = field(default_factory=dict)
    """arm → trials that took more than one attempt (infrastructure retries)."""


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
        usage_known=np.empty(0, dtype=bool),
        trial_index=i,
        seed=i,
    )


def _status_codes(values) -> np.ndarray:
    harness_error = STATUS_CODES[errors.HARNESS_ERROR]
    get = STATUS_CODES.get
    return np.fromiter((get(s, harness_error) for s in values), dtype=np.int8, count=len(values))


def _unpack(texts, n: int, name: str) -> np.ndarray:
    """One packed column (a text per task) as an int64 array of ``n`` trials."""
    values = np.fromstring(",".join(texts), dtype=np.int64, sep=",")
    if values.size != n:
        raise RuntimeError(f"the store returned an unreadable '{name}' column; report it as a bug")
    return values


# long: one columnar query is decoded into every array the report needs in a single pass.
def load_run_data(
    store: Any, run_id: str, *, with_variants: bool | None = None, with_pairing: bool = True
) -> RunData:
    """Read one run's trials and attempts as arrays (``Store.report_rows``, then numpy).

    ``with_variants``: True/False if the caller knows whether the run scheduled variant
    trials; None asks the store. ``with_pairing``: also read each trial's index and seed
    (needed only for the primary comparison's trial rows; else they are -1).
    """
    rows = store.report_rows(run_id, with_variants=with_variants, with_pairing=with_pairing)
    timings = dict(rows.timings)
    t1 = time.perf_counter()
    task_rows = rows.task_rows
    first = len(TASK_FIELDS)
    counts = np.fromiter((r[_F["n"]] for r in task_rows), dtype=np.int64, count=len(task_rows))
    n_total = int(counts.sum())
    per_trial = {
        c.name: _unpack([r[first + i] for r in task_rows], n_total, c.name)
        for i, c in enumerate(rows.packed)
    }
    scaled = {c.name: per_trial[c.name] / c.scale for c in rows.packed if c.scale}
    missing = np.full(n_total, -1, dtype=np.int64)
    status = per_trial["status"].astype(np.int8)
    trial_index = per_trial.get("trial_index", missing)
    seeds = per_trial.get("seed", missing)
    arms: dict[str, ArmTrials] = {}
    start_task = 0
    start_trial = 0
    arm_names = [r[_F["arm"]] for r in task_rows]
    while start_task < len(task_rows):
        arm = arm_names[start_task]
        end_task = start_task
        while end_task < len(task_rows) and arm_names[end_task] == arm:
            end_task += 1
        group = task_rows[start_task:end_task]
        n_per_task = counts[start_task:end_task]
        end_trial = start_trial + int(n_per_task.sum())
        sl = slice(start_trial, end_trial)
        cols = list(zip(*group, strict=True))
        images: set[str] = set()
        for lo, hi in zip(cols[_F["image_min"]], cols[_F["image_max"]], strict=True):
            images.update(x for x in (lo, hi) if x)
        graders: set[str] = set()
        for lo, hi in zip(cols[_F["graders_min"]], cols[_F["graders_max"]], strict=True):
            graders.update(_as_text(x) for x in (lo, hi) if x)
        conf, lat, cost, harm = (scaled[k][sl] for k in ("confidence", "latency", "cost", "harm"))
        tokens = [cols[_F[k]] for k in ("tokens_in", "tokens_cached", "tokens_out")]
        arms[arm] = ArmTrials(
            tasks=np.array(cols[_F["task_id"]], dtype=object),
            clusters=np.array(cols[_F["cluster"]], dtype=object),
            classes=np.array(cols[_F["task_class"]], dtype=object),
            strata=np.array(cols[_F["stratum"]], dtype=object),
            weights=np.array(cols[_F["weight"]], dtype=float),
            tokens=np.array(tokens, dtype=float).T,
            task_index=np.repeat(np.arange(len(group)), n_per_task),
            status=status[sl],
            confidence=np.where(conf < 0, np.nan, conf),
            latency=lat,
            steps=per_trial["steps"][sl].astype(float),
            cost=np.where(cost < 0, np.nan, cost),
            harm=harm,
            usage_known=per_trial["usage_known"][sl] == 1,
            trial_index=trial_index[sl],
            seed=seeds[sl],
            image_ids=images,
            grader_versions=sorted(graders),
        )
        start_task, start_trial = end_task, end_trial

    attempts: dict[str, dict[str, int]] = {}
    attempt_cost: dict[str, dict[str, tuple[float, int]]] = {}
    retried: dict[str, int] = {}
    for arm, outcome, count, usd, known, second in rows.attempts:
        attempts.setdefault(arm, {})[outcome] = count
        attempt_cost.setdefault(arm, {})[outcome] = (usd, known)
        retried[arm] = retried.get(arm, 0) + second
    variants: dict[str, VariantPairs] = {}
    by_arm: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows.variants:
        by_arm.setdefault(r[0], []).append(r)
    for arm, vrows in by_arm.items():
        cols = list(zip(*vrows, strict=True))
        variants[arm] = VariantPairs(
            task=np.array(cols[1], dtype=object),
            variant=np.array(cols[2], dtype=object),
            trial_index=np.array(cols[3], dtype=np.int64),
            status=_status_codes(cols[4]),
            original_status=_status_codes(cols[5]),
        )
    timings["arrays_s"] = time.perf_counter() - t1
    return RunData(
        arms=arms,
        attempts=attempts,
        variants=variants,
        timings=timings,
        attempt_cost=attempt_cost,
        retried=retried,
    )


def _as_text(value: Any) -> str:
    """grader_versions comes back as JSON text (SQLite) or a parsed dict (PostgreSQL)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def empty_arm() -> ArmTrials:
    """An arm with no trials (declared in the run but nothing finished yet)."""
    return _empty_arm()


def comparison_rows(arm: str, data: ArmTrials) -> dict[str, np.ndarray]:
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
