"""A judged run against its human labels: agreement, corrected rates, the judge's own noise.

One function per quantity, every view (``harness judge-agreement`` in the terminal, JSON
and Markdown; the report's judge section) reads the dict ``judge_summary`` returns, so a
corrected rate or an agreement figure is the same number wherever it is printed.

The calibration set is the run's resolved trials that carry both a judge verdict and a
human label of the trial as a whole; a trial labelled by several people counts with the
majority of their labels (a tie is left out and counted). Pass is the positive class: the
judge's sensitivity is the share of people's passes it passed, its specificity the share of
people's fails it failed. Formulas: docs/statistics.md, "Judges".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from harness import errors
from harness.config.roles import Roles
from harness.stats import (
    Calibration,
    JudgeNotInformative,
    cohen_kappa,
    corrected_delta,
    corrected_rate,
    krippendorff_alpha,
    mean_estimate,
    paired_estimate,
    wilson_interval,
)
from harness.stats.aggregate import per_task_rates, task_clusters
from harness.stats.classification import classification_metrics

JUDGE = "judge"


@dataclass
class JudgedRun:
    """What the analyses read of one run's trials: one entry per resolved trial."""

    trial_id: list[int] = field(default_factory=list)
    arm: list[str] = field(default_factory=list)
    task: list[str] = field(default_factory=list)
    cluster: list[str] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)
    judged: list[bool] = field(default_factory=list)
    """The trial has a judge verdict."""
    setups: list[str | None] = field(default_factory=list)
    split: list[int] = field(default_factory=list)
    """Judge criteria whose samples disagreed (0 with one sample)."""
    sampled: list[int] = field(default_factory=list)
    """Judge criteria judged more than once."""
    judge_cost: list[float | None] = field(default_factory=list)
    judge_calls: list[int] = field(default_factory=list)
    tool_calls: list[int | None] = field(default_factory=list)
    """The judge's tool calls over the workspace (None: its judges had no tools)."""
    tool_capped: list[bool] = field(default_factory=list)
    """A step or byte cap of the judge's tools was hit."""
    agent_cost: list[float | None] = field(default_factory=list)
    labels: dict[int, dict[str, bool]] = field(default_factory=dict)
    """trial id → labeller → passed (the trial as a whole)."""
    criteria: list[dict[str, bool]] = field(default_factory=list)
    """Per trial: judge criterion id → the judge's verdict on it."""
    criterion_labels: dict[tuple[int, str], dict[str, bool]] = field(default_factory=dict)
    """(trial id, criterion id) → labeller → passed."""
    unresolved: int = 0


def judged_run(trials: list[Any], labels: list[Any]) -> JudgedRun:
    """Collect a run's trial rows and label rows (``harness.store``) into a ``JudgedRun``."""
    out = JudgedRun()
    for t in trials:
        if t.status not in (errors.PASSED, errors.FAILED):
            out.unresolved += 1
            continue
        verdicts = (t.evidence or {}).get("graders") or []
        judges = [v["details"]["judge"] for v in verdicts if JUDGE in (v.get("details") or {})]
        out.trial_id.append(int(t.id))
        out.arm.append(t.arm)
        out.task.append(t.task_id)
        out.cluster.append(t.cluster)
        out.passed.append(bool(t.passed))
        out.judged.append(bool(judges))
        out.criteria.append({c["id"]: bool(c["passed"]) for j in judges for c in j["criteria"]})
        out.setups.append("+".join(sorted({j["setup"] for j in judges})) if judges else None)
        crit = [c for j in judges if j.get("samples", 1) > 1 for c in j["criteria"]]
        out.sampled.append(len(crit))
        out.split.append(sum(bool(c["disagreed"]) for c in crit))
        out.judge_calls.append(int(t.judge_calls or 0))
        explored = [e for j in judges for e in j.get("tools") or []]
        out.tool_calls.append(sum(len(e["calls"]) for e in explored) if explored else None)
        out.tool_capped.append(any(e["limits_hit"] for e in explored))
        out.judge_cost.append(t.judge_cost_usd)
        out.agent_cost.append(t.cost_usd)
    for label in labels:
        if not label.criterion:
            out.labels.setdefault(int(label.trial_id), {})[label.labeller] = bool(label.passed)
        else:
            key = (int(label.trial_id), label.criterion)
            out.criterion_labels.setdefault(key, {})[label.labeller] = bool(label.passed)
    return out


def _majority(votes: dict[str, bool]) -> bool | None:
    yes = sum(votes.values())
    no = len(votes) - yes
    return None if yes == no else yes > no


def _interval(lo: float, hi: float) -> list[float]:
    return [float(lo), float(hi)]


def _estimate_record(est: Any) -> dict[str, Any] | None:
    return None if est is None else est.as_dict()


def calibration_of(run: JudgedRun) -> tuple[Calibration | None, dict[str, Any]]:
    """The run's calibration set and what was left out of it."""
    judged, human, ties, clusters = [], [], 0, []
    for i, tid in enumerate(run.trial_id):
        votes = run.labels.get(tid)
        if not votes or not run.judged[i]:
            continue
        truth = _majority(votes)
        if truth is None:
            ties += 1
            continue
        judged.append(run.passed[i])
        human.append(truth)
        clusters.append(run.cluster[i])
    info = {"labelled": len(judged), "tied_labels": ties, "clusters": clusters}
    if not judged:
        return None, info
    info["judged"], info["human"] = judged, human
    return Calibration.of(judged, human), info


def agreement(run: JudgedRun, confidence: float) -> dict[str, Any]:
    """The judge against people: the classification metrics with clustered intervals,
    Cohen's κ, Krippendorff's α among people, and the confusion matrix."""
    cal, info = calibration_of(run)
    out: dict[str, Any] = {"n": info["labelled"], "tied_labels": info["tied_labels"]}
    if cal is None:
        out["note"] = "no trial has both a judge verdict and a human label"
        return out
    metrics = classification_metrics(
        np.asarray(info["human"], dtype=float),
        np.asarray(info["judged"], dtype=float),
        info["clusters"],
        confidence=confidence,
    )
    for name in ("accuracy", "recall", "specificity", "precision", "f1"):
        key = "sensitivity" if name == "recall" else name
        out[key] = _estimate_record(metrics.metric(name))
    out["missing"] = metrics.missing
    out["cohen_kappa"] = _kappa(info["judged"], info["human"], confidence)
    out["confusion"] = _confusion(cal)
    out["krippendorff_alpha"] = _people_alpha(run.labels.values(), confidence)
    return out


def _kappa(judged: list[bool], human: list[bool], confidence: float) -> dict[str, Any]:
    """Cohen's κ of the judge against the people's (majority) labels."""
    kappa = cohen_kappa(judged, human, confidence)
    return {"estimate": kappa.estimate, "lo": kappa.lo, "hi": kappa.hi, "n": kappa.n}


def _confusion(cal: Calibration) -> dict[str, int]:
    return {
        "judge_pass_human_pass": cal.true_pos,
        "judge_fail_human_pass": cal.false_neg,
        "judge_pass_human_fail": cal.false_pos,
        "judge_fail_human_fail": cal.true_neg,
    }


def criteria_agreement(run: JudgedRun, confidence: float) -> dict[str, Any]:
    """Per judge criterion people labelled: the judge's verdict on it against theirs
    (majority of labellers, a tie left out): n, accuracy, sensitivity, specificity with
    clustered intervals, Cohen's κ, Krippendorff's α among people when several labelled
    the criterion on the same trials, and the confusion matrix (the trial-level measures of
    ``agreement``, criterion by criterion)."""
    pairs: dict[str, list[tuple[bool, bool, str]]] = defaultdict(list)
    ties: Counter[str] = Counter()
    for i, tid in enumerate(run.trial_id):
        for cid, judge_passed in run.criteria[i].items():
            votes = run.criterion_labels.get((tid, cid))
            if not votes:
                continue
            truth = _majority(votes)
            if truth is None:
                ties[cid] += 1
            else:
                pairs[cid].append((judge_passed, truth, run.cluster[i]))
    out: dict[str, Any] = {}
    for cid in sorted(set(pairs) | set(ties)):
        got = pairs.get(cid, [])
        rec: dict[str, Any] = {"n": len(got), "tied_labels": ties[cid]}
        if got:
            judged, human, clusters = (list(x) for x in zip(*got, strict=True))
            metrics = classification_metrics(
                np.asarray(human, dtype=float),
                np.asarray(judged, dtype=float),
                clusters,
                confidence=confidence,
            )
            for name in ("accuracy", "recall", "specificity"):
                key = "sensitivity" if name == "recall" else name
                rec[key] = _estimate_record(metrics.metric(name))
            rec["missing"] = metrics.missing
            rec["cohen_kappa"] = _kappa(judged, human, confidence)
            rec["confusion"] = _confusion(Calibration.of(judged, human))
        units = [v for (_, c), v in run.criterion_labels.items() if c == cid]
        rec["krippendorff_alpha"] = _people_alpha(units, confidence)
        out[cid] = rec
    return out


def _people_alpha(labelled: Iterable[dict[str, bool]], confidence: float) -> dict[str, Any] | None:
    """Krippendorff's α among the people who labelled these units (labeller → passed per
    unit); None unless two people labelled one unit."""
    units = list(labelled)
    people = sorted({p for votes in units for p in votes})
    shared = [votes for votes in units if len(votes) >= 2]
    if len(people) < 2 or not shared:
        return None
    table = [[votes.get(p) for p in people] for votes in units]
    alpha = krippendorff_alpha(np.array(table, dtype=object), confidence)
    return {
        "estimate": alpha.estimate,
        "lo": alpha.lo,
        "hi": alpha.hi,
        "n": alpha.n,
        "labellers": len(people),
    }


def _arm_rates(run: JudgedRun, arm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(task ids, per-task judged rates, trials per task, clusters) of one arm."""
    idx = [i for i, a in enumerate(run.arm) if a == arm]
    tasks = [run.task[i] for i in idx]
    rates, counts = per_task_rates(tasks, [float(run.passed[i]) for i in idx])
    ids, clusters = task_clusters(tasks, [run.cluster[i] for i in idx])
    return ids, rates, counts, clusters


def corrected(
    run: JudgedRun, roles: Roles | None, confidence: float, *, cautious: bool = False
) -> dict[str, Any]:
    """Per arm the judged pass rate and its Rogan–Gladen correction; the paired delta of the
    primary comparison, corrected, when both arms were judged by the one setup.

    ``cautious``: each arm's rates as the threshold gate decides on them, the judged rate's
    decision bounds (``mean_estimate(cautious=True)``) and the corrected rate's
    (``corrected_rate(bounds=...)``); the delta keeps its interval, as the raw gate's does."""
    cal, info = calibration_of(run)
    setups = {s for s in run.setups if s}
    out: dict[str, Any] = {"n_calibration": info["labelled"], "arms": {}, "delta": None}
    if cal is None:
        out["note"] = "no calibration set: label judged trials (harness view, harness label)"
        return out
    if len(setups) > 1:
        out["note"] = f"the run's trials were judged by {len(setups)} judge setups: not corrected"
        return out
    out["sensitivity"], out["specificity"] = cal.sensitivity, cal.specificity
    try:
        for arm in sorted(set(run.arm)):
            _, rates, counts, clusters = _arm_rates(run, arm)
            raw = mean_estimate(
                rates, clusters, confidence=confidence, cautious=cautious, trials=counts
            )
            fixed = corrected_rate(
                raw.estimate,
                raw.se or 0.0,
                cal,
                df=raw.df,
                confidence=confidence,
                bounds=(raw.lo, raw.hi) if cautious else None,
            )
            out["arms"][arm] = {"raw": raw.as_dict(), "corrected": fixed.as_dict()}
        if roles is not None and roles.baseline and roles.candidate:
            out["delta"] = _corrected_delta(run, roles.baseline, roles.candidate, cal, confidence)
    except JudgeNotInformative as exc:
        out["note"] = f"not corrected: {exc}"
        out["arms"], out["delta"] = {}, None
    return out


def _corrected_delta(
    run: JudgedRun, baseline: str, candidate: str, cal: Calibration, confidence: float
) -> dict[str, Any] | None:
    ta, ra, _, ca = _arm_rates(run, baseline)
    tb, rb, _, _ = _arm_rates(run, candidate)
    shared = sorted(set(ta.tolist()) & set(tb.tolist()))
    if not shared:
        return None
    ia = [ta.tolist().index(t) for t in shared]
    ib = [tb.tolist().index(t) for t in shared]
    raw = paired_estimate(ra[ia], rb[ib], ca[ia], confidence=confidence)
    fixed = corrected_delta(raw.estimate, raw.se or 0.0, cal, df=raw.df, confidence=confidence)
    return {
        "baseline": baseline,
        "candidate": candidate,
        "raw": raw.as_dict(),
        "corrected": fixed.as_dict(),
    }


def judge_noise(run: JudgedRun, confidence: float) -> dict[str, Any]:
    """How often the judge disagreed with itself (criteria with several samples), and what
    it cost beside the agent, per arm."""
    sampled, split = sum(run.sampled), sum(run.split)
    lo, hi = wilson_interval(split, sampled, confidence) if sampled else (0.0, 1.0)
    per_arm: dict[str, dict[str, Any]] = defaultdict(dict)
    for arm in sorted(set(run.arm)):
        idx = [i for i, a in enumerate(run.arm) if a == arm and run.judged[i]]
        judge = [run.judge_cost[i] for i in idx]
        agent = [run.agent_cost[i] for i in idx]
        per_arm[arm] = {
            "judged_trials": len(idx),
            "judge_calls": sum(run.judge_calls[i] for i in idx),
            "judge_cost_per_trial_usd": _mean_known(judge),
            "agent_cost_per_trial_usd": _mean_known(agent),
            **_tool_use(run, idx),
        }
    return {
        "self_disagreement": {
            "rate": split / sampled if sampled else None,
            "lo": lo,
            "hi": hi,
            "n": sampled,
            "split": split,
        },
        "cost": dict(per_arm),
        "setups": sorted(Counter(s for s in run.setups if s)),
    }


def _tool_use(run: JudgedRun, idx: list[int]) -> dict[str, int]:
    """The judge's exploration of the workspace in these trials (nothing when it had no
    tools: the summaries of runs without them stay as they were)."""
    explored = [i for i in idx if run.tool_calls[i] is not None]
    if not explored:
        return {}
    return {
        "explored_trials": len(explored),
        "tool_calls": sum(run.tool_calls[i] or 0 for i in explored),
        "tool_capped_trials": sum(run.tool_capped[i] for i in explored),
    }


def _mean_known(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known and len(known) == len(values) else None


def judge_summary(run: JudgedRun, roles: Roles | None, confidence: float = 0.95) -> dict[str, Any]:
    """Everything the judge views show: agreement, corrected rates, noise and cost."""
    return json.loads(
        json.dumps(
            {
                "judged_trials": int(sum(run.judged)),
                "resolved_trials": len(run.trial_id),
                "unresolved_trials": run.unresolved,
                "agreement": agreement(run, confidence),
                "criteria": criteria_agreement(run, confidence),
                "corrected": corrected(run, roles, confidence),
                "judge": judge_noise(run, confidence),
                "confidence": confidence,
            },
            default=float,
        )
    )


def run_judge_summary(store: Any, run: Any, confidence: float = 0.95) -> dict[str, Any]:
    """``judge_summary`` of a stored run: its trial rows and labels read from ``store``, the
    primary comparison's roles from its suite (one view for ``harness judge-agreement`` and
    the report's judge section)."""
    from harness.analysis.load import load_trial_rows
    from harness.analysis.roles import run_roles
    from harness.release.run_config import StoredSuite
    from harness.store.labels import run_labels

    judged = judged_run(load_trial_rows(store, run.id), run_labels(store.engine, run.id))
    suite = cast(StoredSuite, (run.config or {}).get("suite") or {})
    roles = run_roles(suite, list(run.arms)) if len(run.arms) > 1 else None
    return judge_summary(judged, roles, confidence)
