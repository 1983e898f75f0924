"""Store rows → report data (pure). Renderers (terminal, JSON, Markdown, HTML) only format it.

``harness.report.load_report(run_id, store_url)`` returns a ``harness.report.records.Report``
(the schema, with each field's meaning, is written there once), built here section by
section in the order of that schema.

Per-task aggregation comes first: a task's trials are counted per task before any interval
over tasks is formed, so repeated trials never shrink an interval as if they were new tasks.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from harness import errors
from harness.analysis import Settings, run_roles
from harness.analysis.load import RunTable
from harness.analysis.settings import ESTIMAND
from harness.analysis.table import FAILED_CODE, PASSED_CODE, Trials
from harness.release.run_config import StoredConfig, StoredSuite
from harness.report import measures as ms
from harness.report import reliability as rel
from harness.report import sections as sec
from harness.report import usage as use
from harness.report.compare import must_never_section, primary_comparison
from harness.report.deltas import arm_settings, deltas_section, roles_record
from harness.report.records import (
    ArmReport,
    PassAtK,
    Report,
    ReportSettings,
    RunSummary,
    Success,
    UsageSection,
    Versions,
)
from harness.report.subset import subset_section
from harness.stats.records import Interval
from harness.stats.task_units import Unit, choose_unit, mean_interval

FEW_EFFECTIVE_CLUSTERS = 5
"""Below this many effective clusters (J²/Σ J_r²) the success rate warns about unequal sizes."""

SCHEMA = "harness.report/2"
RUN_KEYS = (
    "id",
    "suite",
    "status",
    "started_at",
    "finished_at",
    "harness_version",
    "config_hash",
    "sandbox",
    "seed",
    "trials_per_task",
    "image_ids",
)
DEFAULT_RESAMPLES = 10_000
DEFAULT_PREDICTION_RESAMPLES = 200


def settings_record(settings: Settings, suite: StoredSuite) -> ReportSettings:
    """The run's analysis settings (``harness.analysis.settings_of``) as the report shows them."""
    rep = suite.get("report") or {}
    return {
        "confidence": settings.confidence,
        "denominator": settings.denominator,
        "denominator_text": settings.denominator_text,
        "cluster_key": settings.cluster_key,
        "k": list(settings.k) if settings.k else None,
        "primary": rep.get("primary"),
        "phase_one_trials": settings.phase_one_trials,
        "estimand": settings.estimand,
    }


def scheduled_per_arm(
    config: StoredConfig, trials: int, jobs_planned: int, n_arms: int
) -> tuple[int, int]:
    """(original trials, variant trials) scheduled per arm, from the stored suite."""
    tasks = config.get("tasks")
    suite = config.get("suite", {})
    if isinstance(tasks, dict) and tasks:
        original = len(tasks) * trials
        variants = 0
        if suite.get("variants"):
            variants = trials * sum(len(t.get("variants") or []) for t in tasks.values())
        return original, variants
    return jobs_planned // max(1, n_arms), 0


def build_report(
    run: RunSummary,
    data: RunTable,
    *,
    settings: Settings,
    scheduled: tuple[int, int],
    n_resamples: int = DEFAULT_RESAMPLES,
    prediction_resamples: int = DEFAULT_PREDICTION_RESAMPLES,
    suite: StoredSuite | None = None,
    must_never_tasks: set[str] | None = None,
) -> Report:
    """The whole report for one run (pure: the run table in, JSON-able dict out). ``suite``
    is the run's stored suite: arm roles and settings, and the description, come from it;
    ``must_never_tasks``: the tasks its config flags ``must_never: true``."""
    seed = int(run.get("seed") or 0)
    suite = suite or {}
    analysis = settings
    shown = ReportSettings(
        **settings_record(analysis, suite),
        n_resamples=n_resamples,
        prediction_resamples=prediction_resamples,
        bootstrap_seed=seed,
    )
    arm_names = list(run.get("arms") or [])
    arm_names += [a for a in data.trials.arm.present() if a not in arm_names]
    arms: dict[str, ArmReport] = {}
    warnings: list[str] = []
    for name in arm_names:
        arms[name] = arm_report(
            data.trials.of_arm(name),
            attempts=data.attempts.get(name, {}),
            attempt_cost=data.attempt_cost.get(name, {}),
            retried=data.retried.get(name, 0),
            trials_per_task=int(run.get("trials_per_task") or 1),
            scheduled=scheduled,
            settings=shown,
            n_resamples=n_resamples,
            prediction_resamples=prediction_resamples,
            seed=seed,
            analysis=analysis,
        )
        warnings += _arm_warnings(name, arms[name])
    roles = run_roles(suite, list(arms))
    comparison, warning = primary_comparison(data, roles, analysis)
    if warning:
        warnings.append(warning)
    must_never = must_never_section(data, roles, suite, must_never_tasks or set())
    subset = subset_section(data.trials, analysis, roles, int(run.get("trials_per_task") or 1))
    return {
        "schema": SCHEMA,
        "run": cast(
            RunSummary,
            {k: run.get(k) for k in RUN_KEYS} | {"description": suite.get("description") or ""},
        ),
        "settings": shown,
        "estimand": estimand_text(analysis),
        "sampling_unit": _sampling_unit(arms),
        "versions": _versions(run, data.trials.originals()),
        "arms": arms,
        "roles": roles_record(roles),
        "arm_settings": arm_settings(suite, roles),
        "comparison": comparison,
        "class_deltas": deltas_section(data, roles, analysis, comparison, suite),
        "must_never": must_never,
        "warnings": warnings,
        **({"subset": subset} if subset else {}),
    }


def estimand_text(settings: Settings) -> str:
    """The sentence naming what the success intervals are for (``report.estimand``)."""
    from harness.analysis.settings import SUBSET_ESTIMAND
    from harness.stats.fixed_suite import ESTIMAND as FIXED

    text = FIXED if settings.fixed_suite else ESTIMAND
    return f"{SUBSET_ESTIMAND}; each arm's headline: {text}" if settings.subset else text


def _arm_warnings(name: str, arm: ArmReport) -> list[str]:
    """The arm's warnings worth repeating at the top: interval, latency, missing trials."""
    out = []
    w = (arm.get("success") or {}).get("warning")
    if w:
        out.append(f"{name}: {w}")
    w = arm["usage"]["latency"].get("warning")
    if w:
        out.append(f"{name}: latency: {w}")
    if arm["trials_missing"]:
        out.append(
            f"{name}: {arm['trials_missing']} scheduled trials never finished "
            "(interrupted run?): resume it before drawing conclusions"
        )
    return out


def _sampling_unit(arms: dict[str, ArmReport]) -> str:
    """What counts as one independent observation, in words, across the arms."""
    unit_kinds = {a["unit"]["kind"] for a in arms.values() if a.get("unit")}
    if unit_kinds == {"cluster"}:
        return "cluster of tasks (task.cluster): intervals resample or cluster on whole clusters"
    if unit_kinds == {"task"}:
        return "task: trials of a task are averaged first; tasks are the independent units"
    return "per arm (see arms.*.unit)"


def _versions(run: RunSummary, trials: Trials) -> Versions:
    """What the numbers were measured with: harness, config, seed, sandbox, the trials'
    images and the grader versions behind their verdicts."""
    return {
        "harness_version": run.get("harness_version"),
        "config_hash": run.get("config_hash"),
        "seed": run.get("seed"),
        "sandbox": run.get("sandbox"),
        "image_ids": run.get("image_ids") or {},
        "trial_image_ids": trials.texts("image"),
        "grader_versions": {g: sorted(v) for g, v in sorted(trials.grader_versions().items())},
    }


def _empty_sections() -> ArmReport:
    """The estimate sections of an arm with no counted task."""
    return {
        "success": None,
        "pass_hat_k": [],
        "pass_at_k": [],
        "pass_hat_k_predicted": None,
        "pass_at_k_predicted": None,
        "unstable_tasks": 0,
        "unstable_task_ids": [],
        "slices": {"class": [], "cluster": []},
        "stratified": None,
        "reliability": {
            "consistency": None,
            "robustness": None,
            "calibration": None,
            "harm": None,
        },
        "measures": {"classification": None, "macro": None, "scores": None, "other_estimand": None},
    }


def _arm_counts(
    arm: Trials,
    attempts: dict[str, int],
    scheduled: tuple[int, int],
    denominator: str,
    confidence: float,
    retried: int = 0,
) -> ArmReport:
    """Trial accounting of one arm: scheduled, completed, unresolved, by status, crashes,
    retries."""
    codes, counts = np.unique(arm.status, return_counts=True)
    by_status = {errors.STATUSES[int(c)]: int(n) for c, n in zip(codes, counts, strict=True)}
    completed = len(arm)
    unresolved = completed - by_status.get(errors.PASSED, 0) - by_status.get(errors.FAILED, 0)
    return {
        "tasks": int(arm.task_ids.size),
        "clusters": len(set(arm.per_task("cluster").tolist())),
        "trials_scheduled": int(scheduled[0]),
        "trials_completed": completed,
        "trials_unresolved": unresolved,
        "trials_missing": max(0, int(scheduled[0]) - completed),
        "variant_trials_scheduled": int(scheduled[1]),
        "by_status": by_status,
        "denominator": denominator,
        "infra": {
            **use.infra_section(by_status, attempts, confidence, retried, trials=completed),
            "unresolved_by_class": use.unresolved_by_class(
                arm.task_class.values(),
                np.isin(arm.status, (PASSED_CODE, FAILED_CODE)),
                confidence,
            ),
        },
    }


def _success(
    rates: np.ndarray,
    n: np.ndarray,
    clusters: np.ndarray,
    unit: Unit,
    effective: float,
    conf: float,
) -> Success:
    """The headline success record, with a warning when its interval is not to be trusted."""
    success: Success = {
        **mean_interval(rates, unit, conf),
        "n_clusters": len(set(clusters.tolist())),
        "n_trials": int(n.sum()),
        "estimand": ESTIMAND,
    }
    if unit.warning:
        success["warning"] = unit.warning
    elif unit.kind == "cluster" and effective < FEW_EFFECTIVE_CLUSTERS:
        success["warning"] = (
            f"unequal cluster sizes leave about {effective:.1f} "
            "effective clusters (J²/Σ J_r²): cluster-robust intervals are themselves "
            "uncertain and may be too narrow (docs/statistics.md, effective clusters)"
        )
    return success


def _measures(
    arm: Trials, outcomes: sec.TaskOutcomes, unit: Unit, analysis: Settings, success: Success
) -> ms.Measures:
    """Classification metrics, macro beside micro, scores, and the other estimand's interval
    (under ``estimand: fixed-suite`` the headline ``success`` takes the fixed-suite one)."""
    inc, confidence = outcomes.include, analysis.confidence
    n, c = outcomes.n[inc], outcomes.c[inc]
    fixed = ms.fixed_suite_interval(c, n, None, confidence)
    other = cast(Interval, dict(success))
    if analysis.fixed_suite:
        success.update(fixed)
        if not fixed.get("warning"):
            success.pop("warning", None)
    else:
        other = fixed
    index = np.full(arm.task_ids.size, -1)
    index[np.flatnonzero(inc)] = np.arange(int(inc.sum()))
    scores = None
    if arm.has("score"):
        task_of = index[arm.task_index]
        counted = (task_of >= 0) & (arm.resolved | (analysis.denominator == "failure"))
        values = np.where(arm.resolved, arm.score, 0.0)[counted]
        scores = ms.scores_section(values, task_of[counted], int(inc.sum()), unit, confidence)
    return {
        "classification": ms.classification_section(
            arm.task_ids[inc], c, n, unit, analysis.positives, confidence
        ),
        "macro": ms.macro_section(arm.per_task("task_class")[inc], c / n, unit, confidence),
        "scores": scores,
        "other_estimand": other,
    }


def _consistency(hat: list[PassAtK], trials_per_task: int) -> PassAtK | None:
    """pass^k at k = trials per task, read as the chance that every trial of a task succeeds."""
    consistency = next((p.copy() for p in hat if p["k"] == trials_per_task), None)
    if consistency is None or trials_per_task < 2:
        return None
    consistency["estimand"] = (
        f"chance that {trials_per_task} independent trials of a random task all succeed "
        "(pass^k at k = trials per task)"
    )
    return consistency


# long: it assembles the arm's sections in the order of the report schema (records.ArmReport), one call
#   each.
def arm_report(
    trials: Trials,
    *,
    attempts: dict[str, int],
    trials_per_task: int,
    attempt_cost: dict[str, tuple[float, int]] | None = None,
    retried: int = 0,
    scheduled: tuple[int, int],
    settings: ReportSettings,
    n_resamples: int,
    prediction_resamples: int,
    seed: int,
    analysis: Settings | None = None,
) -> ArmReport:
    """One arm's sections, from its trials (variants feed only the robustness section).
    ``analysis``: the run's settings (the estimand and the tasks' declared truths)."""
    analysis = analysis or Settings(
        confidence=settings["confidence"], denominator=settings["denominator"]
    )
    arm = trials.originals()
    confidence = settings["confidence"]
    denominator = settings["denominator"]
    rng = np.random.default_rng(seed)
    out = _arm_counts(arm, attempts, scheduled, denominator, confidence, retried)
    outcomes = sec.task_outcomes(arm, denominator)
    inc = outcomes.include
    out["tasks_without_resolved_trials"] = int(arm.task_ids.size - inc.sum())
    n, c = outcomes.n[inc], outcomes.c[inc]
    task_clusters = arm.per_task("cluster")
    clusters = task_clusters[inc]
    unit = choose_unit(clusters, settings["cluster_key"])
    out["unit"] = {
        "kind": unit.kind,
        "n_units": unit.n_units,
        "reason": unit.reason,
        "effective_clusters": use.effective_cluster_count(clusters),
    }

    def usage() -> UsageSection:
        return use.usage_section(
            arm,
            unit,
            inc,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            attempt_cost=attempt_cost,
            attempts=attempts,
        )

    if n.size == 0:
        out.update(_empty_sections())
        out["usage"] = usage()
        return out

    rates = c / n
    success = _success(rates, n, clusters, unit, out["unit"]["effective_clusters"], confidence)
    out["success"] = success
    out["measures"] = _measures(arm, outcomes, unit, analysis, success)
    ks = settings.get("k") or list(range(1, trials_per_task + 1))
    hat, at = sec.pass_k_section(n, c, unit, sorted(set(ks)), confidence=confidence)
    out["pass_hat_k"], out["pass_at_k"] = hat, at
    ext = sec.extrapolation(
        n, c, unit, n_resamples=prediction_resamples, seed=seed, confidence=confidence
    )
    out["pass_hat_k_predicted"] = sec.prediction_section(n, c, trials_per_task, hat, ext, unit)
    out["pass_at_k_predicted"] = sec.pass_at_prediction_section(n, trials_per_task, ext, unit)
    unstable = (c > 0) & (c < n)
    out["unstable_tasks"] = int(unstable.sum())
    out["unstable_task_ids"] = sorted(str(t) for t in arm.task_ids[inc][unstable])[:50]
    out["slices"] = {
        "class": sec.slices_section(
            arm.per_task("task_class")[inc], rates, n.astype(float), confidence, unit.labels
        ),
        "cluster": sec.slices_section(clusters, rates, n.astype(float), confidence, unit.labels),
    }
    out["stratified"] = sec.stratified_section(
        rates, arm.per_task("stratum")[inc], arm.per_task("weight")[inc], unit, confidence
    )
    cluster_of = dict(zip(arm.task_ids.tolist(), task_clusters.tolist(), strict=True))
    out["reliability"] = {
        "consistency": _consistency(hat, trials_per_task),
        "robustness": rel.robustness_section(trials, cluster_of, unit, denominator, confidence),
        "calibration": rel.calibration_section(
            arm, unit, inc, n_resamples=n_resamples, rng=rng, confidence=confidence
        ),
        "harm": rel.harm_section(arm, unit, inc, confidence),
    }
    out["usage"] = usage()
    return out
