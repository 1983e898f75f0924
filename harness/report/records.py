"""The report data's schema, written once: ``Report`` and the records it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from harness.release.records import Comparison, MustNever, NoiseFloor, PrimaryRecord
from harness.report.measures import Measures
from harness.report.prediction_records import PassAtK, Prediction
from harness.stats.records import Interval

if TYPE_CHECKING:
    from harness.report.subset import SubsetSection


class SliceRow(Interval, total=False):
    """Success on one class or cluster of tasks."""

    name: str
    tasks: int
    trials: int


PerTrialTokens = TypedDict(
    "PerTrialTokens", {"in": float | None, "cached": float | None, "out": float | None}
)
Tokens = TypedDict(
    "Tokens",
    {
        "in": int | None,
        "cached": int | None,
        "out": int | None,
        "per_trial": PerTrialTokens,
        "trials": int,
        "known_trials": int,
        "unknown_trials": int,
        "note": str | None,
    },
)
"""Token sums over an arm's trials with known usage (``cached`` is part of ``in``) and the
mean per such trial; None when no trial's usage is known. ``unknown_trials``: trials whose
model endpoint reported no usage (never counted as zero tokens)."""


class AttemptSpend(TypedDict):
    """What every attempt of an arm spent (part of ``CostSummary``)."""

    spent_usd: float | None
    discarded_attempts: int
    discarded_usd: float | None
    unknown_cost_attempts: int


class CostSummary(TypedDict):
    """Cost over resolved trials with a known price (unknown is never counted as zero)."""

    scope: str
    trials: int
    known_trials: int
    unknown_trials: int
    total_usd: float | None
    per_trial_usd: Interval | None
    per_success_usd: Interval | None
    note: str | None
    spent_usd: NotRequired[float | None]
    """Every attempt's known cost: the resolved trials' and the discarded attempts' (retried
    after an infrastructure error, or of trials left without a verdict)."""
    discarded_attempts: NotRequired[int]
    discarded_usd: NotRequired[float | None]
    """The known cost of the discarded attempts (part of ``spent_usd``)."""
    unknown_cost_attempts: NotRequired[int]
    """Attempts whose cost is unknown (no price, no usage reported, or an older store)."""


class Latency(TypedDict, total=False):
    """Seconds per resolved trial: median and 95th percentile with order-statistic intervals."""

    n: int
    unit: str
    p50_s: float
    p95_s: float
    p50_interval: list[float]
    p95_interval: list[float]
    mean_s: float
    method: str
    warning: str


class Steps(TypedDict, total=False):
    n: int
    mean: float
    p50: float
    p95: float


class UsageSection(TypedDict):
    tokens: Tokens
    cost: CostSummary
    latency: Latency
    steps: Steps


class InfraSection(TypedDict, total=False):
    """Crash accounting: unresolved trials by kind and the per-attempt crash rate."""

    infra_error_trials: int
    grader_error_trials: int
    harness_error_trials: int
    attempts: int
    attempts_by_outcome: dict[str, int]
    infra_error_attempts: int
    crash_rate: Interval | None
    retried_trials: int
    """Trials that took more than one attempt (retried after an infrastructure error)."""
    retry_rate: Interval | None
    """Retried trials ÷ trials completed, with a Wilson interval: the retry rate per arm (the
    gate compares it between arms: ``harness.release.evidence.balance_check``)."""
    unresolved_by_class: list[ClassUnresolved]


class ReportSettings(TypedDict):
    """How the report counts and intervals, as the run's suite declares them."""

    confidence: float
    denominator: str
    """'failure' (unresolved trials count as failures) or 'exclude'."""
    denominator_text: str
    cluster_key: str
    k: list[int] | None
    """The suite's ``report.k`` (pass^k values to show), as written."""
    primary: PrimaryRecord | None
    """The suite's ``report.primary``: baseline and candidate arm names."""
    phase_one_trials: int | None
    estimand: NotRequired[str]
    """'superpopulation' or 'fixed-suite': what the success intervals are for."""
    n_resamples: NotRequired[int]
    """Bootstrap resamples of the report's intervals (set when the report is built)."""
    prediction_resamples: NotRequired[int]
    bootstrap_seed: NotRequired[int]


class Versions(TypedDict):
    """What the numbers came from: versions, seed, sandbox and the pinned images."""

    harness_version: str | None
    config_hash: str | None
    seed: int | None
    sandbox: str | None
    image_ids: dict[str, str | None]
    trial_image_ids: list[str]
    grader_versions: dict[str, list[str]]


NO_VERSIONS: Versions = {
    "harness_version": None,
    "config_hash": None,
    "seed": None,
    "sandbox": None,
    "image_ids": {},
    "trial_image_ids": [],
    "grader_versions": {},
}
"""What a report without a ``versions`` section shows (every version unknown)."""


class DiagramBin(TypedDict):
    """One non-empty bin of the reliability diagram."""

    confidence: float
    """Mean stated confidence of the bin's trials."""
    success: float
    n: int


class Stratum(TypedDict):
    name: str
    tasks: int
    weight_share: float
    """The stratum's share of the task weights."""
    estimate: float


class Stratified(Interval, total=False):
    """The design-weighted success rate over declared strata."""

    n_eff: float
    strata: list[Stratum]


class Robustness(Interval, total=False):
    """Variant − original success on paired tasks (meaning-preserving rewordings)."""

    p_value: float | None
    n_pairs: int
    n_tasks: int
    variants: list[str]
    original_rate: float | None
    variant_rate: float | None
    original_interval: list[float | None]
    variant_interval: list[float | None]


class Calibration(Interval, total=False):
    """Expected calibration error of the agent's stated confidence."""

    ece: float | None
    n_tasks: int
    bins: int
    mean_confidence: float | None
    success_rate: float | None
    success_interval: list[float | None]
    mean_confidence_interval: list[float | None]
    diagram: list[DiagramBin]


class Harm(Interval, total=False):
    """How often and how badly the arm's trials did harm (graders' severity scores)."""

    harmful_trials: int
    trials: int
    mean_severity: float | None
    trial_share: float | None
    trial_mean_severity: float | None
    max_severity: float | None


class Reliability(TypedDict):
    consistency: PassAtK | None
    robustness: Robustness | None
    calibration: Calibration | None
    harm: Harm | None


class UnitChoice(TypedDict):
    """Which unit the arm's intervals resample or cluster on, and why."""

    kind: str
    n_units: int
    reason: str
    effective_clusters: float


Slices = dict[str, list[SliceRow]]
"""Success by task class ('class') and by cluster ('cluster')."""


class Success(Interval, total=False):
    """The arm's headline success rate."""

    n_clusters: int
    n_trials: int
    estimand: str


class Cause(TypedDict):
    """One cause of unresolved trials: its kind, count, and one example."""

    kind: str
    count: int
    example: str
    trial_id: int


class UnresolvedCauses(TypedDict):
    causes: list[Cause]
    other: int
    """Unresolved trials with a cause outside the top ones."""


class ArmReport(TypedDict, total=False):
    """One arm's section of the report."""

    tasks: int
    """Tasks with at least one original (non-variant) trial."""
    clusters: int
    """Clusters with at least one original trial."""
    trials_scheduled: int
    """Original trials planned for this arm."""
    trials_completed: int
    """Original trials with a final row."""
    trials_unresolved: int
    """Completed trials with no verdict (infra, grader or harness error)."""
    trials_missing: int
    """Scheduled − completed: trials that never finished (an interrupted run)."""
    variant_trials_scheduled: int
    by_status: dict[str, int]
    """Original trials by final status."""
    denominator: str
    """'failure' or 'exclude': the policy applied to every estimate."""
    infra: InfraSection
    tasks_without_resolved_trials: int
    """Tasks dropped from the estimates under ``denominator: exclude``."""
    unit: UnitChoice
    success: Success | None
    """The mean of per-task rates (a rate record), or None when nothing is counted."""
    pass_hat_k: list[PassAtK]
    """pass^k per k: the mean of the unbiased per-task estimates."""
    pass_at_k: list[PassAtK]
    pass_hat_k_predicted: Prediction | None
    """The beta-binomial prediction beyond the trials run (a prediction, not observed)."""
    pass_at_k_predicted: Prediction | None
    unstable_tasks: int
    """Tasks with 0 < passes < counted trials."""
    unstable_task_ids: list[str]
    """The first 50 of them, sorted."""
    slices: Slices
    stratified: Stratified | None
    reliability: Reliability
    measures: Measures
    """Classification metrics, macro beside micro, partial-credit scores, and the success
    interval of the estimand the suite did not declare (``harness.report.measures``)."""
    usage: UsageSection
    unresolved_causes: UnresolvedCauses
    """Top causes of unresolved trials (``harness.report.causes``), when loaded from a store."""
    agent_failure_causes: UnresolvedCauses
    """Failures the agent itself caused (timeouts, invalid results), by kind."""


class PairedDelta(Interval, total=False):
    """The candidate's paired delta over a set of tasks, with the tasks that moved."""

    n_clusters: int
    improved: int
    worse: int


_ClassName = TypedDict("_ClassName", {"class": str}, total=False)


class ClassDelta(PairedDelta, _ClassName, total=False):
    """The candidate's paired delta on one task class."""


class ClassDeltas(TypedDict, total=False):
    """Paired per-class deltas of the candidate; the A/A arm's delta is the noise floor."""

    baseline: str
    candidate: str
    overall: PairedDelta
    by_class: list[ClassDelta]
    method: str
    confidence: float
    noise_floor: NoiseFloor | None


class ArmSetting(TypedDict, total=False):
    """An arm as the suite declares it."""

    role: str | None
    agent: str | None
    model: str | None
    params: dict[str, object] | None
    """Free-form agent parameters, as written in the suite."""


class RunSummary(TypedDict, total=False):
    """The run's row as the report shows it (``RUN_KEYS`` plus the suite's description)."""

    id: str
    suite: str
    status: str
    started_at: str | None
    finished_at: str | None
    harness_version: str | None
    config_hash: str | None
    sandbox: str | None
    seed: int | None
    trials_per_task: int | None
    image_ids: dict[str, str | None]
    description: str
    arms: list[str]


class TaskProvenance(TypedDict):
    task: str
    why: str
    """The task's ``grade_in_place`` reason, or the environment that sets ``user: root``."""
    trials: dict[str, int]
    """arm → trials of this task in the report."""


class Provenance(TypedDict):
    graded_in_place: list[TaskProvenance]
    agent_root: list[TaskProvenance]


class StepProgress(TypedDict):
    """One step of one multi-step task for one arm (``report.steps``)."""

    arm: str
    task: str
    step: str
    index: int
    trials: int
    reached: int
    passed: int
    rate: float
    lo: float
    hi: float
    confidence: float
    mean_reward: float


class Report(TypedDict, total=False):
    """The whole report of one run: the contract the renderers and the viewer read.

    JSON-serialisable (undefined numbers are null, never NaN); keys are only ever added,
    never renamed. Every rate in it is a rate record (``harness.stats.records.Interval``:
    estimate, lo, hi, n, unit, confidence, method), where ``n`` counts the independent units
    the interval was formed over (tasks unless the record says otherwise)."""

    schema: str
    """'harness.report/2'."""
    run: RunSummary
    settings: ReportSettings
    estimand: str
    """The headline estimand in words."""
    sampling_unit: str
    """What counts as one independent observation, in words."""
    versions: Versions
    arms: dict[str, ArmReport]
    roles: dict[str, str | None]
    """{baseline, candidate, aa}: arm names or None, by the one rule (``harness.config.roles``)."""
    arm_settings: dict[str, ArmSetting]
    comparison: Comparison | None
    """The primary comparison candidate − baseline (``harness.analysis.paired``)."""
    class_deltas: ClassDeltas | None
    """The primary comparison per task class, with the A/A arm's as the noise floor."""
    must_never: MustNever
    """The candidate's must-never checks (the gate's ``must_never`` classes and the tasks
    flagged ``must_never``), with or without a gate: any failure there is a violation."""
    warnings: list[str]
    subset: NotRequired[SubsetSection | None]
    """A subset run's full-suite estimates, savings and precision (``report.subset``)."""
    steps: NotRequired[list[StepProgress]]
    """A run with multi-step tasks: per arm, task and step, the trials that reached and
    passed it (``report.steps``)."""
    judge: NotRequired[dict[str, Any]]
    """A run graded by a model judge: its agreement with people's labels, the rates corrected
    for its error, its self-disagreement and cost (``harness.analysis.judging.judge_summary``,
    what ``harness judge-agreement --json`` prints at the report's confidence)."""
    pairwise: NotRequired[dict[str, Any]]
    """A run with stored pairwise judgements: win rates, position bias, Bradley–Terry
    ratings and the judge's spend (``harness.pairwise.summary.run_pairwise_summary``, what
    ``harness pairwise RUN --json`` prints of them)."""
    provenance: Provenance
    """Tasks graded in the agent's own sandbox and tasks whose agent ran as root, with
    their trials per arm (also named in ``warnings``)."""


class ClassUnresolved(TypedDict):
    """Trials without a verdict in one task class (share of the class's trials, Wilson)."""

    name: str
    trials: int
    unresolved: int
    estimate: float
    lo: float
    hi: float
    n: int
    unit: str
    confidence: float
    method: str


class ErrorKind(TypedDict):
    """Unresolved trials of one arm with one status and error kind."""

    arm: str
    status: str
    kind: str
    count: int
