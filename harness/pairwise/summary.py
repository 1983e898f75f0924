"""Stored pairwise judgements → win rates, position bias and Bradley–Terry ratings.

Every statistic is a function of ``harness.stats.pairwise``: the two verdicts of a pair
(arm_a shown first, arm_b shown first) become one score of arm_a (``swapped_outcome``:
verdicts that disagree are a tie); the win rate is (wins + ½ ties)/comparisons with the
interval every rate gets over tasks or their clusters (``win_rate``); the position-bias rate
is the share of pairs whose two verdicts picked the same position (``position_bias``); with
three or more arms one Bradley–Terry fit rates them on the Elo scale with cluster-bootstrap
intervals (``bradley_terry_ratings``). A pair with an unresolved verdict in either order is
left out of every rate and counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from harness.store.pairwise import mirrored
from harness.store.tables import PairwiseJudgement

if TYPE_CHECKING:
    from harness.store import Store
    from harness.store.tables import Run, Trial

BOOTSTRAP_RESAMPLES = 2000


def clusters_of(run: Run, trials: Iterable[Trial]) -> dict[str, str]:
    """Each task's cluster, the independent unit of every interval: its trials' ``cluster``
    (the task itself when it has none), or each task alone under the suite's
    ``report.cluster_key: task``."""
    suite = (run.config or {}).get("suite")
    report = (suite.get("report") if isinstance(suite, dict) else None) or {}
    alone = report.get("cluster_key") == "task"
    return {t.task_id: t.task_id if alone or not t.cluster else t.cluster for t in trials}


def side_labels(j: PairwiseJudgement, across: bool) -> tuple[str, str]:
    """The judgement's two sides: its arms within a run, ``RUN:ARM`` across runs."""
    if not across:
        return j.arm_a, j.arm_b
    return f"{j.run_id}:{j.arm_a}", f"{j.run_b or j.run_id}:{j.arm_b}"


def _pairs(
    judgements: Sequence[PairwiseJudgement], across: bool
) -> dict[tuple[str, str], dict[tuple[str, str, int], dict[str, PairwiseJudgement]]]:
    """(side a, side b) -> (task, variant, trial index) -> shown_first -> judgement, each
    judgement under both orders of its sides (read mirrored the other way round), so a pair
    is found whichever way round it was judged."""
    out: dict[tuple[str, str], dict[tuple[str, str, int], dict[str, PairwiseJudgement]]] = {}
    for j in judgements:
        for row in (j, mirrored(j)):
            cell = out.setdefault(side_labels(row, across), {}).setdefault(
                (row.task_id, row.variant, row.trial_index), {}
            )
            cell.setdefault(row.shown_first, row)
    return out


def _pair_summary(
    arm_a: str,
    arm_b: str,
    cells: Mapping[tuple[str, str, int], dict[str, PairwiseJudgement]],
    clusters: Mapping[str, str],
    confidence: float,
) -> tuple[dict[str, Any], list[tuple[str, str, str, float, str]]]:
    """One pair of arms' record, and its resolved comparisons as (first verdict, second
    verdict, task, arm_a's score, cluster)."""
    from harness.stats.pairwise import position_bias, swapped_outcome, win_rate

    rows, unresolved = [], 0
    for (task, _variant, _index), by_order in sorted(cells.items()):
        first, second = by_order.get("A"), by_order.get("B")
        if first is None or second is None:
            continue  # judged in one order only (an interrupted command): not a comparison
        if "unresolved" in (first.verdict, second.verdict):
            unresolved += 1
            continue
        score = swapped_outcome(first.verdict, second.verdict)
        rows.append((first.verdict, second.verdict, task, score, clusters.get(task, task)))
    scores = [r[3] for r in rows]
    record: dict[str, Any] = {
        "arm_a": arm_a,
        "arm_b": arm_b,
        "comparisons": len(rows),
        "unresolved": unresolved,
        "wins": sum(s == 1.0 for s in scores),
        "ties": sum(s == 0.5 for s in scores),
        "losses": sum(s == 0.0 for s in scores),
        "win_rate": None,
        "position_bias": None,
    }
    if rows:
        est = win_rate(scores, [r[2] for r in rows], [r[4] for r in rows], confidence)
        record["win_rate"] = est.as_dict()
        bias = position_bias(
            [r[0] for r in rows], [r[1] for r in rows], confidence, [r[4] for r in rows]
        )
        record["position_bias"] = _bias_record(bias)
    return record, rows


def _bias_record(bias: Any) -> dict[str, Any]:
    return {"rate": bias.rate, "lo": bias.lo, "hi": bias.hi, "n": bias.n, "biased": bias.biased}


def pairwise_summary(
    judgements: Sequence[PairwiseJudgement],
    arms: Sequence[str],
    clusters: Mapping[str, str],
    confidence: float = 0.95,
    seed: int = 0,
    across: bool = False,
) -> dict[str, Any]:
    """The summary of one setup's judgements over ``arms`` (every pair, in their order).

    ``clusters``: each task's cluster (the independent unit of every interval); ``across``:
    the arms are ``RUN:ARM`` sides of several runs."""
    from harness.stats.pairwise import bradley_terry_ratings, position_bias

    grouped = _pairs(judgements, across)
    pairs, every = [], []
    for arm_a, arm_b in combinations(arms, 2):
        record, rows = _pair_summary(
            arm_a, arm_b, grouped.get((arm_a, arm_b), {}), clusters, confidence
        )
        pairs.append(record)
        every += [(arm_a, arm_b, *r) for r in rows]
    summary: dict[str, Any] = {
        "arms": list(arms),
        "confidence": confidence,
        "pairs": pairs,
        "position_bias": None,
        "ratings": None,
    }
    if every:
        bias = position_bias(
            [r[2] for r in every], [r[3] for r in every], confidence, [r[6] for r in every]
        )
        summary["position_bias"] = _bias_record(bias)
    if len(arms) >= 3:
        if not every:
            summary["ratings"] = {"note": "no resolved comparisons"}
        else:
            try:
                fit = bradley_terry_ratings(
                    [r[0] for r in every],
                    [r[1] for r in every],
                    [r[5] for r in every],
                    [r[6] for r in every],
                    confidence=confidence,
                    n_resamples=BOOTSTRAP_RESAMPLES,
                    rng=seed,
                )
            except ValueError as exc:
                summary["ratings"] = {"note": str(exc)}
            else:
                summary["ratings"] = _ratings_record(fit)
    summary["judge"] = _spend(judgements)
    return summary


def _ratings_record(fit: Any) -> dict[str, Any]:
    return {
        "arms": {
            a: {"rating": r, "lo": lo, "hi": hi}
            for a, r, lo, hi in zip(fit.arms, fit.rating, fit.lo, fit.hi, strict=True)
        },
        "n": fit.n,
        "n_clusters": fit.n_clusters,
        "resamples": fit.resamples,
        "degenerate": fit.degenerate,
        "scale": "Elo (400 points = 10-to-1 odds), mean 1000",
    }


def _spend(judgements: Sequence[PairwiseJudgement]) -> dict[str, Any]:
    def total(values: list[Any]) -> Any:
        return None if any(v is None for v in values) else sum(values)

    return {
        "calls": len(judgements),
        "unresolved_calls": sum(j.verdict == "unresolved" for j in judgements),
        "tokens_in": total([j.tokens_in for j in judgements]),
        "tokens_out": total([j.tokens_out for j in judgements]),
        "cost_usd": total([j.cost_usd for j in judgements]),
        "setups": sorted({j.setup for j in judgements}),
        "models": sorted({j.judge_model for j in judgements}),
    }


def run_pairwise_summary(store: Store, run: Run, confidence: float = 0.95) -> dict[str, Any] | None:
    """The summary of a run's stored pairwise judgements (what ``harness pairwise RUN
    --json`` prints of them when it judged every arm), for the report; None when the run has
    none. Several setups: the newest judgement's, the others counted."""
    from harness.store.pairwise import has_judgements, run_judgements

    if not has_judgements(store.engine, run.id):
        return None
    every = run_judgements(store.engine, run.id)
    setup = every[-1].setup
    judged = [j for j in every if j.setup == setup]
    seen = {a for j in judged for a in (j.arm_a, j.arm_b)}
    arms = [a for a in run.arms if a in seen]
    clusters = clusters_of(run, store.trials(run.id))
    summary = {"run_id": run.id, **pairwise_summary(judged, arms, clusters, confidence)}
    summary["other_setups"] = len({j.setup for j in every}) - 1
    return summary
