"""Paired comparison of two arms on the same tasks: the number a release decision reads.

When-not-to-ship guide: estimate each arm's per-task success rate from its scheduled trials, subtract
baseline from candidate per task, aggregate those differences with the declared task weights,
and form the interval over the independent unit (cluster), with the one method every view
uses (``harness.stats.mean_estimate``). Eval-harness guide:
only the discordant tasks carry information about which arm is better, so the test is the
exact McNemar test (single-trial designs) or the sign test on per-task differences.

Everything here is pure: rows in (plain dicts, as read from the store), a JSON-able dict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.release.records import ArmRate, Comparison, Dropped, PairTable, TrialRow

if TYPE_CHECKING:
    from harness.stats.estimate import Estimate


FIXED_RULE = "a task counts as passed by an arm when its per-task rate is at least 50%"
"""The threshold behind the fixed/broke table when tasks have several trials (stated in
every view that prints the table)."""
ESTIMATOR_ALL = "all trials: mean over tasks of per-task rate differences"
ESTIMATOR_PHASE_ONE = (
    "phase one only (the first {k} trial(s) of every task, before adaptive repeats): unbiased; "
    "the all-trials delta is shrunk toward 0 by the repeat selection and is shown for reading only"
)
TEST_MCNEMAR = "exact McNemar on discordant tasks"
TEST_SIGN = "sign test on per-task differences"
PAIRING_TRIAL = "per-trial (shared seed blocks)"
PAIRING_TASK = "per-task"


def outcome(row: TrialRow, denominator: str = "failure") -> float | None:
    """A trial's 0/1 outcome, or None when the row leaves the denominator.

    ``denominator="failure"`` (the default, the conservative reading of the when-not-to-ship guide) counts an
    unresolved trial (infra/grader/harness error) as a failure; ``"exclude"`` drops it.
    """
    status = row.get("status")
    if status == "passed":
        return 1.0
    if status == "failed":
        return 0.0
    if denominator == "exclude":
        return None
    if denominator != "failure":
        raise ValueError("denominator must be 'failure' or 'exclude'")
    return 0.0


def task_rates(
    rows: Iterable[TrialRow], denominator: str = "failure"
) -> tuple[dict[str, float], dict[str, str]]:
    """Per-task success rates over the task-as-written trials (variants left out), and each
    task's cluster: the per-task aggregation every interval over tasks starts from."""
    trials: dict[str, list[float]] = {}
    clusters: dict[str, str] = {}
    for r in rows:
        if (r.get("variant") or "") != "":
            continue
        y = outcome(r, denominator)
        if y is not None:
            trials.setdefault(r["task_id"], []).append(y)
            clusters[r["task_id"]] = r.get("cluster") or r["task_id"]
    return {t: sum(v) / len(v) for t, v in trials.items()}, clusters


COLUMNS = ("task_id", "cluster", "task_class", "weight", "status", "trial_index", "seed", "variant")


TrialColumns = Mapping[str, np.ndarray | Sequence[object]]
"""Trial rows as columns: a mapping of equal-length arrays or sequences, named as ``COLUMNS``."""
TrialRows = Iterable[TrialRow] | TrialColumns
"""Trial rows as dicts, or as columns."""
NULL: Any = None
"""Python None as a numpy operand: ``np.equal(column, NULL)`` marks the missing values."""


def as_columns(rows: TrialRows) -> dict[str, np.ndarray]:
    """Trial rows as numpy columns: a mapping of equal-length sequences is taken as it is (the
    fast path the report uses for a million rows); a list of row dicts is transposed once."""
    if isinstance(rows, Mapping):
        n = len(rows["task_id"])
        return {
            k: np.asarray(rows[k]) if k in rows else np.full(n, None, dtype=object) for k in COLUMNS
        }
    rows = list(rows)
    return {k: np.array([r.get(k) for r in rows], dtype=object) for k in COLUMNS}


def _ints(values: np.ndarray, missing: int) -> tuple[np.ndarray, bool]:
    """(int64 array, whether every value was present)."""
    if values.dtype != object:
        return values.astype(np.int64), True
    absent = np.equal(values, NULL)
    return np.where(absent, missing, values).astype(np.int64), not bool(absent.any())


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted unique values, index of each value's first row, inverse codes), like
    ``np.unique(..., return_index=True, return_inverse=True)`` but hashing instead of
    sorting a million Python strings (several times faster)."""
    items = values.tolist()
    names = sorted(set(items))
    index = {name: i for i, name in enumerate(names)}
    inverse = np.fromiter(map(index.__getitem__, items), dtype=np.int64, count=len(items))
    _, first = np.unique(inverse, return_index=True)
    return np.array(names, dtype=object), first, inverse


def _strings(values: np.ndarray, default: str | None = None) -> np.ndarray:
    out = values.astype(object)
    if default is not None:
        out = np.where(np.equal(out, NULL) | np.equal(out, ""), default, out)
    return out


@dataclass
class _Tasks:
    """Per-task counts of one arm (tasks in sorted id order)."""

    ids: np.ndarray
    successes: np.ndarray
    trials: np.ndarray
    scheduled: np.ndarray
    unresolved: np.ndarray
    cluster: np.ndarray
    task_class: np.ndarray
    weight: np.ndarray
    block_digest: np.ndarray
    """Per task, an order-free 64-bit digest of its (trial index, variant, seed) blocks; two
    arms share a task's blocks exactly when the digests and trial counts agree."""
    seeds_known: bool


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads 64-bit keys so that sums of them do not collide."""
    x = x.astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _by_task(
    cols: dict[str, np.ndarray],
    denominator: str,
    cluster_key: str,
    variants: bool,
    variant_codes: dict[str, int],
) -> _Tasks:
    if denominator not in ("failure", "exclude"):
        raise ValueError("denominator must be 'failure' or 'exclude'")
    variant = _strings(cols["variant"], "")
    keep = np.ones(len(variant), bool) if variants else (variant == "")
    status = cols["status"][keep]
    ids, first, inverse = _factorize(cols["task_id"][keep])
    n = len(ids)
    passed = (status == "passed").astype(float)
    resolved = (status == "passed") | (status == "failed")
    counted = resolved if denominator == "exclude" else np.ones(len(status), bool)
    if cluster_key == "task":
        cluster = ids.astype(object)
    else:
        cluster = cols["cluster"][keep][first].astype(object)
        cluster = np.where(np.equal(cluster, NULL) | np.equal(cluster, ""), ids, cluster)
    classes = _strings(cols["task_class"][keep][first], "default")
    weights = cols["weight"][keep][first]
    weights = np.where(np.equal(weights, NULL), 1.0, weights).astype(float)
    trial_index, _ = _ints(cols["trial_index"][keep], -1)
    seeds, seeds_known = _ints(cols["seed"][keep], 0)
    vcode = np.fromiter(
        map(variant_codes.__getitem__, variant[keep].tolist()), np.int64, count=int(keep.sum())
    )
    with np.errstate(over="ignore"):
        key = _mix(seeds) ^ _mix(trial_index * 1_000_003 + vcode + 0x5BD1E995)
    digest = np.zeros(n, dtype=np.uint64)
    np.add.at(digest, inverse, _mix(key))
    return _Tasks(
        ids=ids,
        successes=np.bincount(inverse, weights=passed * counted, minlength=n),
        trials=np.bincount(inverse, weights=counted.astype(float), minlength=n).astype(int),
        scheduled=np.bincount(inverse, minlength=n),
        unresolved=np.bincount(inverse, weights=(~resolved).astype(float), minlength=n).astype(int),
        cluster=cluster,
        task_class=classes,
        weight=weights,
        block_digest=digest,
        seeds_known=seeds_known,
    )


def _same_blocks(ta: _Tasks, tb: _Tasks, ia: np.ndarray, ib: np.ndarray) -> bool:
    """Does every paired task have the same (trial index, variant, seed) blocks in both arms?"""
    if not (ta.seeds_known and tb.seeds_known):
        return False
    return bool(
        np.array_equal(ta.scheduled[ia], tb.scheduled[ib])
        and np.array_equal(ta.block_digest[ia], tb.block_digest[ib])
    )


def _p_values(broke: int, fixed: int) -> dict[str, float]:
    from harness.stats import mcnemar_exact

    return {
        alt: float(mcnemar_exact(broke, fixed, alt)) for alt in ("two-sided", "greater", "less")
    }


# long: one pass over the paired tasks yields the estimate, the exact test, the design label and the
#   per-task rows; split, each part would redo the pairing.
def paired_comparison(
    rows_a: TrialRows,
    rows_b: TrialRows,
    *,
    confidence: float = 0.95,
    cluster_key: str = "cluster",
    denominator: str = "failure",
    weights: bool = True,
    variants: bool = False,
    phase_one_trials: int | None = None,
) -> Comparison:
    """Paired comparison of candidate (B) against baseline (A) on the tasks both ran.

    Estimand: Σ_j w_j (p̂_Bj − p̂_Aj) / Σ_j w_j, the weighted mean over paired tasks of the
    per-task success-rate difference (candidate − baseline; positive means the candidate is
    better). Interval: ``harness.stats.mean_estimate`` on the per-task differences (the one
    method every view uses: CR1 + t on clusters, a bound when no unit varied, the whole range
    for one unit) at ``confidence`` (a one-sided bound at level 1 − α is the lower or upper
    end of the two-sided interval at 1 − 2α); each arm's rate gets the same function. Test: exact McNemar on discordant tasks when every paired
    task has exactly one trial per arm, else the exact sign test on per-task differences;
    ``p_value`` is two-sided, ``p_values`` holds the one-sided tails too ("greater": the
    candidate is better).

    Args:
        rows_a, rows_b: trial-row dicts of the baseline and the candidate (keys arm, task_id,
            cluster, task_class, weight, status, passed, trial_index, seed, variant).
        cluster_key: ``"cluster"``: the rows' clusters are the unit; ``"task"``: each task.
        denominator: ``"failure"`` counts unresolved trials as failures; ``"exclude"`` drops
            them (a task with no resolved trial in either arm is then unpaired).
        weights: aggregate with the rows' task weights (else every task counts equally).
        variants: include meaning-preserving variant trials as further trials of their task
            (default: only the task as written).
        phase_one_trials: under adaptive repeats, the trials every task got in phase one.
            The headline is then the phase-one estimate (unbiased; repeats chosen by
            discordance shrink the all-trials delta toward 0), and ``all_trials`` holds the
            all-trials numbers for reading. ``estimator`` names what the headline is.

    Only tasks present in both arms are paired; the others are counted in ``dropped``.
    Assumes clusters are independent (when-not-to-ship guide).
    """
    if phase_one_trials is not None:
        return _phase_one(
            rows_a,
            rows_b,
            phase_one_trials,
            confidence=confidence,
            cluster_key=cluster_key,
            denominator=denominator,
            weights=weights,
            variants=variants,
        )
    from harness.stats import mean_estimate, sign_test

    cols_a, cols_b = as_columns(rows_a), as_columns(rows_b)
    names = sorted(
        set(_strings(cols_a["variant"], "").tolist())
        | set(_strings(cols_b["variant"], "").tolist())
    )
    variant_codes = {name: i for i, name in enumerate(names)}
    ta = _by_task(cols_a, denominator, cluster_key, variants, variant_codes)
    tb = _by_task(cols_b, denominator, cluster_key, variants, variant_codes)
    common, ia, ib = np.intersect1d(ta.ids, tb.ids, return_indices=True)
    ok = (ta.trials[ia] > 0) & (tb.trials[ib] > 0)
    paired, ia, ib = common[ok].tolist(), ia[ok], ib[ok]
    only_a = sorted(set(ta.ids.tolist()) - set(tb.ids.tolist()))
    only_b = sorted(set(tb.ids.tolist()) - set(ta.ids.tolist()))
    no_verdict = common[~ok].tolist()
    dropped: Dropped = {
        "n": len(only_a) + len(only_b) + len(no_verdict),
        "baseline_only": only_a[:20],
        "candidate_only": only_b[:20],
        "no_resolved_trial": no_verdict[:20],
    }
    out: Comparison = {
        "confidence": confidence,
        "estimator": ESTIMATOR_ALL,
        "fixed_rule": FIXED_RULE,
        "denominator": denominator,
        "weights": "declared task weights" if weights else "equal",
        "n_tasks": len(paired),
        "n": len(paired),
        "unit": "task",
        "dropped": dropped,
        "n_trials": {
            "baseline": int(ta.scheduled[ia].sum()),
            "candidate": int(tb.scheduled[ib].sum()),
        },
        "unresolved": {
            "baseline": int(ta.unresolved[ia].sum()),
            "candidate": int(tb.unresolved[ib].sum()),
        },
    }
    if not paired:
        out.update(
            {
                "estimate": None,
                "lo": None,
                "hi": None,
                "n_clusters": 0,
                "method": None,
                "independent_unit": None,
                "interval_warning": None,
                "table": {"both_pass": 0, "fixed": 0, "broke": 0, "both_fail": 0},
                "signs": {"improved": 0, "worse": 0, "tied": 0},
                "p_value": None,
                "p_values": {},
                "test": None,
                "pairing": None,
                "design": "no paired tasks",
                "baseline": None,
                "candidate": None,
                "tasks": [],
            }
        )
        return out

    na, nb = ta.trials[ia], tb.trials[ib]
    ra = ta.successes[ia] / na
    rb = tb.successes[ib] / nb
    clusters = ta.cluster[ia].tolist()
    w = ta.weight[ia] if weights else None
    diff = mean_estimate(rb - ra, clusters, weights=w, kind="difference", confidence=confidence)
    # Equal weights make the arms' rates the plain mean of per-task rates, which is the
    # report's headline: pass none, so both get the same method (Wilson over tasks).
    wr = None if w is None or not w.size or bool(np.all(w == w[0])) else w
    base = mean_estimate(ra, clusters, weights=wr, kind="rate", confidence=confidence)
    cand = mean_estimate(rb, clusters, weights=wr, kind="rate", confidence=confidence)
    d = rb - ra
    single = bool(np.all(na == 1) and np.all(nb == 1))
    pass_a, pass_b = ra >= 0.5, rb >= 0.5
    table: PairTable = {
        "both_pass": int(np.count_nonzero(pass_a & pass_b)),
        "fixed": int(np.count_nonzero(~pass_a & pass_b)),
        "broke": int(np.count_nonzero(pass_a & ~pass_b)),
        "both_fail": int(np.count_nonzero(~pass_a & ~pass_b)),
    }
    signs = {
        "improved": int(np.count_nonzero(d > 0)),
        "worse": int(np.count_nonzero(d < 0)),
        "tied": int(np.count_nonzero(d == 0)),
    }
    if single:
        p_values = _p_values(table["broke"], table["fixed"])
        test = TEST_MCNEMAR
    else:
        p_values = {alt: float(sign_test(d, alt)) for alt in ("two-sided", "greater", "less")}
        test = TEST_SIGN
    # Trial-level pairing needs a real shared unit: every (trial index, variant, seed) block
    # of a task in one arm appears in the other (when-not-to-ship guide).
    shared = _same_blocks(ta, tb, ia, ib)
    trials = sorted(set(zip(na.tolist(), nb.tolist(), strict=True)))
    if single:
        design = "1 trial per task per arm"
    elif len(trials) == 1 and trials[0][0] == trials[0][1]:
        design = f"{trials[0][0]} trials per task per arm"
    else:
        design = "unequal trials per task (e.g. adaptive repeats)"
    out.update(
        {
            "estimate": diff.estimate,
            "lo": diff.lo,
            "hi": diff.hi,
            "se": diff.se,
            "n_clusters": len(set(clusters)),
            "independent_unit": diff.unit,
            "n_units": diff.n_units,
            "method": diff.method,
            "method_key": diff.method_key,
            "interval_warning": diff.warning,
            "table": table,
            "signs": signs,
            "p_value": p_values["two-sided"],
            "p_values": p_values,
            "test": test,
            "pairing": PAIRING_TRIAL if shared else PAIRING_TASK,
            "design": design,
            "baseline": _arm_record(base),
            "candidate": _arm_record(cand),
            "tasks": [
                {
                    "task_id": t,
                    "task_class": k,
                    "cluster": c,
                    "baseline": a,
                    "candidate": b,
                    "n_baseline": x,
                    "n_candidate": y,
                }
                for t, k, c, a, b, x, y in zip(
                    paired,
                    ta.task_class[ia].tolist(),
                    clusters,
                    ra.tolist(),
                    rb.tolist(),
                    na.tolist(),
                    nb.tolist(),
                    strict=True,
                )
            ],
        }
    )
    return out


def _arm_record(e: Estimate) -> ArmRate:
    """One arm's rate over the paired tasks, with n, unit and the shared method."""
    return {
        "estimate": e.estimate,
        "rate": e.estimate,
        "lo": e.lo,
        "hi": e.hi,
        "n": e.n,
        "unit": "task",
        "confidence": e.confidence,
        "method": e.method,
        "warning": e.warning,
    }


def _phase_one(rows_a: TrialRows, rows_b: TrialRows, k: int, **kw: Any) -> Comparison:
    """The adaptive-repeats comparison: the phase-one estimate as headline, all trials beside."""
    first_a = _first(rows_a, k)
    first_b = _first(rows_b, k)
    head = paired_comparison(first_a, first_b, **kw)
    every = paired_comparison(rows_a, rows_b, **kw)
    head["estimator"] = ESTIMATOR_PHASE_ONE.format(k=k)
    head["all_trials"] = {
        "estimate": every.get("estimate"),
        "lo": every.get("lo"),
        "hi": every.get("hi"),
        "baseline": every.get("baseline"),
        "candidate": every.get("candidate"),
        "n_trials": every["n_trials"],
        "design": every["design"],
        "estimator": ESTIMATOR_ALL + " (biased under adaptive repeats)",
    }
    head["design"] = every["design"]
    head["n_trials"] = every["n_trials"]
    head["tasks"] = every["tasks"]
    return head


def _first(rows: Any, k: int) -> Any:
    """Rows (a list of dicts or a column mapping) with trial_index < k."""
    if isinstance(rows, Mapping):
        keep = np.asarray(rows["trial_index"]).astype(np.int64) < k
        return {key: np.asarray(v)[keep] for key, v in rows.items()}
    return [r for r in rows if int(r["trial_index"]) < k]
