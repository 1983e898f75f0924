"""Paired comparison of two arms on the same tasks: the number a release decision reads.

When-not-to-ship guide: estimate each arm's per-task success rate from its scheduled trials, subtract
baseline from candidate per task, aggregate those differences with the declared task weights,
and form the interval over the independent unit (cluster), with the one method every view
uses (``harness.stats.mean_estimate``). Eval-harness guide:
only the discordant tasks carry information about which arm is better, so the test is the
exact McNemar test (single-trial designs) or the sign test on per-task differences.

Everything here is pure: two arms' trials in (``harness.analysis.table.Trials``), a
JSON-able dict out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.analysis.table import Trials
from harness.release.records import ArmRate, Comparison, Dropped, PairTable

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


def task_rates(
    trials: Trials, denominator: str = "failure", cluster_key: str = "cluster"
) -> tuple[list[str], list[float], list[str]]:
    """(task ids, per-task success rates, clusters) over the tasks as written (variants left
    out) with a counted trial, in task order: the per-task aggregation every interval over
    tasks starts from. A task without a cluster label, or every task under ``cluster_key:
    task``, is its own cluster."""
    t = _by_task(trials, denominator, cluster_key)
    keep = t.trials > 0
    rates = t.successes[keep] / t.trials[keep]
    return t.ids[keep].tolist(), rates.tolist(), t.cluster[keep].tolist()


def task_counts(
    trials: Trials, denominator: str = "failure"
) -> tuple[list[str], list[int], list[int], list[str]]:
    """(task ids, passes, counted trials, clusters) of the tasks ``task_rates`` reads (the
    same tasks, in order): the counts behind each per-task rate."""
    t = _by_task(trials, denominator, "cluster")
    keep = t.trials > 0
    return (
        t.ids[keep].tolist(),
        t.successes[keep].astype(int).tolist(),
        t.trials[keep].tolist(),
        t.cluster[keep].tolist(),
    )


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
    """Per task, an order-free 64-bit digest of its (trial index, seed) blocks; two arms
    share a task's blocks exactly when the digests and trial counts agree."""
    seeds_known: bool


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads 64-bit keys so that sums of them do not collide."""
    x = x.astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _by_task(trials: Trials, denominator: str, cluster_key: str) -> _Tasks:
    if denominator not in ("failure", "exclude"):
        raise ValueError("denominator must be 'failure' or 'exclude'")
    t = trials.originals()
    ids, inverse = t.task_ids, t.task_index
    n = len(ids)
    passed = t.passed.astype(float)
    resolved = t.resolved
    counted = resolved if denominator == "exclude" else np.ones(len(t), bool)
    cluster = ids.astype(object) if cluster_key == "task" else _or(t.per_task("cluster"), ids)
    seeds_known = t.has("seed")
    seeds = t.seed if seeds_known else np.zeros(len(t), dtype=np.int64)
    with np.errstate(over="ignore"):
        key = _mix(seeds) ^ _mix(t.trial_index * 1_000_003 + 0x5BD1E995)
    digest = np.zeros(n, dtype=np.uint64)
    np.add.at(digest, inverse, _mix(key))
    return _Tasks(
        ids=ids,
        successes=np.bincount(inverse, weights=passed * counted, minlength=n),
        trials=np.bincount(inverse, weights=counted.astype(float), minlength=n).astype(int),
        scheduled=np.bincount(inverse, minlength=n),
        unresolved=np.bincount(inverse, weights=(~resolved).astype(float), minlength=n).astype(int),
        cluster=cluster,
        task_class=_or(t.per_task("task_class"), np.full(n, "default", dtype=object)),
        weight=t.per_task("weight").astype(float),
        block_digest=digest,
        seeds_known=seeds_known,
    )


def _or(labels: np.ndarray, default: np.ndarray) -> np.ndarray:
    """``labels`` with the missing ones (None or '') taken from ``default``."""
    missing = np.array([not x for x in labels.tolist()], dtype=bool)
    return np.where(missing, default, labels).astype(object)


def _same_blocks(ta: _Tasks, tb: _Tasks, ia: np.ndarray, ib: np.ndarray) -> bool:
    """Does every paired task have the same (trial index, seed) blocks in both arms?"""
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
    trials_a: Trials,
    trials_b: Trials,
    *,
    confidence: float = 0.95,
    cluster_key: str = "cluster",
    denominator: str = "failure",
    weights: bool = True,
    phase_one_trials: int | None = None,
) -> Comparison:
    """Paired comparison of candidate (B) against baseline (A) on the tasks both ran.

    Estimand: Σ_j w_j (p̂_Bj − p̂_Aj) / Σ_j w_j, the weighted mean over paired tasks of the
    per-task success-rate difference (candidate − baseline; positive means the candidate is
    better). Interval: ``harness.stats.paired_estimate`` (the one method every view uses:
    MOVER from the two arms' logit-scale CR2 intervals over clusters, or their Wilson
    intervals over independent tasks; a bound when no unit varied; the whole range for one
    unit) at ``confidence`` (a one-sided bound at level 1 − α is the lower or upper end of the
    two-sided interval at 1 − 2α, which is what the gate reads); each arm's rate by
    ``mean_estimate``. Test: exact McNemar on discordant tasks when every paired
    task has exactly one trial per arm, else the exact sign test on per-task differences;
    ``p_value`` is two-sided, ``p_values`` holds the one-sided tails too ("greater": the
    candidate is better).

    Args:
        trials_a, trials_b: the baseline's and the candidate's trials (only the tasks as
            written count: variant trials are left out).
        cluster_key: ``"cluster"``: the trials' clusters are the unit; ``"task"``: each task.
        denominator: ``"failure"`` counts unresolved trials as failures; ``"exclude"`` drops
            them (a task with no resolved trial in either arm is then unpaired).
        weights: aggregate with the tasks' weights (else every task counts equally).
        phase_one_trials: under adaptive repeats, the trials every task got in phase one.
            The headline is then the phase-one estimate (unbiased; repeats chosen by
            discordance shrink the all-trials delta toward 0), and ``all_trials`` holds the
            all-trials numbers for reading. ``estimator`` names what the headline is.

    Only tasks present in both arms are paired; the others are counted in ``dropped``.
    Assumes clusters are independent (when-not-to-ship guide).
    """
    if phase_one_trials is not None:
        return _phase_one(
            trials_a,
            trials_b,
            phase_one_trials,
            confidence=confidence,
            cluster_key=cluster_key,
            denominator=denominator,
            weights=weights,
        )
    from harness.stats import mean_estimate, paired_estimate, sign_test

    ta = _by_task(trials_a, denominator, cluster_key)
    tb = _by_task(trials_b, denominator, cluster_key)
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
    diff = paired_estimate(ra, rb, clusters, weights=w, confidence=confidence, trials=(na, nb))
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
    # Trial-level pairing needs a real shared unit: every (trial index, seed) block
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


def _phase_one(trials_a: Trials, trials_b: Trials, k: int, **kw: Any) -> Comparison:
    """The adaptive-repeats comparison: the phase-one estimate as headline, all trials beside."""
    head = paired_comparison(trials_a.first(k), trials_b.first(k), **kw)
    every = paired_comparison(trials_a, trials_b, **kw)
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
