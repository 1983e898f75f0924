"""Typed shapes of what the release decisions return: the paired comparison, the A/A noise
floor, gate results, screens, power plans. Reports print the same comparison and floor
records (``harness.report.records`` imports them from here: release sits below report)."""

from __future__ import annotations

from typing import NotRequired, TypedDict, final

from harness.release.quantity import GateQuantity
from harness.stats.records import Interval


class PairTable(TypedDict, total=False):
    """Paired tasks by outcome in baseline and candidate."""

    both_pass: int
    fixed: int
    broke: int
    both_fail: int


class ArmRate(Interval, total=False):
    """One arm's success rate inside a comparison (the shared estimate record)."""

    rate: float | None
    """The same number as ``estimate``, under the name older readers of the JSON use."""
    warning: str | None


class Dropped(TypedDict):
    """Tasks left unpaired (first 20 of each kind)."""

    n: int
    baseline_only: list[str]
    candidate_only: list[str]
    no_resolved_trial: list[str]


class PairedTask(TypedDict):
    """One paired task: each arm's success rate and trial count."""

    task_id: str
    task_class: str
    cluster: str
    baseline: float
    candidate: float
    n_baseline: int
    n_candidate: int


class AllTrials(TypedDict, total=False):
    """Under adaptive repeats: the all-trials numbers (biased), beside the phase-one headline."""

    estimate: float | None
    lo: float | None
    hi: float | None
    baseline: ArmRate | None
    candidate: ArmRate | None
    n_trials: dict[str, int]
    design: str
    estimator: str


class Comparison(Interval, total=False):
    """The paired comparison of candidate against baseline (``paired_comparison``)."""

    baseline_arm: str
    candidate_arm: str
    n_tasks: int
    n_clusters: int
    table: PairTable
    test: str | None
    p_value: float | None
    estimator: str
    design: str
    baseline: ArmRate | None
    candidate: ArmRate | None
    fixed_rule: str
    interval_warning: str | None
    denominator: str
    weights: str
    dropped: Dropped
    n_trials: dict[str, int]
    """Trials over the paired tasks, per role ('baseline', 'candidate')."""
    unresolved: dict[str, int]
    independent_unit: str | None
    n_units: int
    signs: dict[str, int]
    """Paired tasks whose rate went up ('improved'), down ('worse') or stayed ('tied')."""
    p_values: dict[str, float]
    """One- and two-sided p-values by alternative: 'two-sided', 'greater', 'less'."""
    pairing: str | None
    tasks: list[PairedTask]
    all_trials: AllTrials
    verdict: str
    """In a gate result: the rule's verdict on this comparison."""
    why: str
    interval_level: float


class NoiseFloor(Interval, total=False):
    """The A/A arm's delta against its baseline: how far identical arms drift apart."""

    arm: str
    degenerate: bool
    """True when the floor cannot show noise (no task moved, or common random numbers)."""
    degenerate_reason: str | None
    excludes_zero: bool
    half_width: float
    n_clusters: int
    table: PairTable
    signs: dict[str, int]
    p_value: float | None
    floor: float
    """The larger distance of the interval's ends from 0 (``harness release history``)."""


_ClassName = TypedDict("_ClassName", {"class": str}, total=False)


class ClassScreen(_ClassName, total=False):
    """One task class's paired comparison inside the screens (never a verdict)."""

    n_tasks: int
    n: int
    unit: str
    n_clusters: int
    baseline: float | None
    candidate: float | None
    baseline_interval: list[float | None]
    candidate_interval: list[float | None]
    estimate: float | None
    lo: float | None
    hi: float | None
    method: str | None
    warning: str | None
    table: PairTable
    signs: dict[str, int]
    p_value: float | None
    p_values: dict[str, float]
    p_holm: float
    """The two-sided p-value after Holm's adjustment over the classes."""
    look_here: bool


class Screens(TypedDict):
    """Per-class screens with Holm-adjusted p-values: where to look next."""

    classes: list[ClassScreen]
    holm_alpha: float
    look_here: list[str]
    opposite_moves: dict[str, list[str]] | None
    note: str | None
    label: str
    confidence: float
    thresholds: str


class DesignSummary(TypedDict):
    """The trial design and its spend (fixed or adaptive repeats)."""

    design: str
    trials: int
    full_repeats_trials: int
    repeated_tasks: int
    saved_share: float


class MustNeverCheck(TypedDict):
    """One must-never class (or the flagged tasks): asserted, never tested."""

    name: str
    status: str
    """'violated', 'unverified' or 'held'."""
    trials: int
    failures: list[str]
    unresolved: list[str]
    message: str


class MustNever(TypedDict):
    """The must-never checks of one arm, and the trials they cover (each counted once)."""

    arm: str | None
    """The arm checked: the primary comparison's candidate (a one-arm run's only arm)."""
    trials: int
    failed: int
    checks: list[MustNeverCheck]
    """Empty when the suite declares no must-never class and flags no task."""


class ArmCoverage(TypedDict):
    trials: int
    unresolved: int
    share: float


class Coverage(TypedDict):
    """Trials without a verdict per arm (and per class where any), against the limit."""

    name: str
    limit: float
    arms: dict[str, ArmCoverage]
    by_class: dict[str, dict[str, dict[str, int]]]
    worst_share: float
    status: str
    """'ok' or 'exceeded'."""


class BalanceShare(TypedDict):
    """One arm's share of trials with a property (retried, or without a verdict)."""

    trials: int
    count: int
    share: float
    lo: float
    hi: float
    """Wilson interval at the balance check's level."""


class BalanceGap(TypedDict):
    """Candidate − baseline in one share, with its Newcombe interval."""

    what: str
    """'retried' (more than one attempt) or 'unresolved' (no verdict)."""
    arms: dict[str, BalanceShare]
    gap: float
    lo: float
    hi: float
    imbalanced: bool
    """The gap is beyond the bound and its interval excludes 0."""


class Balance(TypedDict):
    """Do the arms differ in retried or unresolved share? An agent could turn failures into
    retries, and missing verdicts are not random: a may-ship verdict then is inconclusive."""

    name: str
    bound: float
    confidence: float
    method: str
    gaps: list[BalanceGap]
    status: str
    """'ok', 'imbalanced', or 'not applicable' (no baseline: the threshold rule)."""


class Sequential(TypedDict):
    """The nightly reading (``harness.release.nightly``): this season's nights and evidence."""

    look: int  # this run's night within the season (1-based)
    season_looks: int
    nights: list[str]  # the season's run ids, oldest first (this run last)
    estimates: list[float]
    ses: list[float]
    regression_evidence: float
    """The e-detector R after this night; a regression is flagged at ``regression_threshold``."""
    regression_threshold: float
    ship_evidence: float
    """The confirming test martingale M after this night; shipping needs ``ship_threshold``."""
    ship_threshold: float
    alpha: float
    schedule: str
    restart: str


class ThresholdCheck(TypedDict, total=False):
    """The candidate's own rate against the policy's bar, with P(p > bar)."""

    bar: float
    n: int
    unit: str
    prior: str
    estimate: float
    lo: float
    hi: float
    n_clusters: int
    method: str
    interval_warning: str | None
    n_eff: float
    p_above_bar: float
    verdict: str
    why: str


class RunComparison(Comparison, total=False):
    """``harness compare A B``: the comparison, preconditions, A/A floor, screens (or refused)."""

    baseline_side: str
    candidate_side: str
    differences: list[dict[str, str]]
    """Why the sides cannot be paired: each a 'check' and its 'message'."""
    forced: bool
    refused: bool
    judge_change: str | None
    """How the sides' judge setups differ, when --allow-judge-change let them be paired."""
    within_run: bool
    noise_floor: NoiseFloor | None
    screens: Screens | None


class PrimaryRecord(TypedDict):
    """The primary comparison's arms (``PrimaryComparison``)."""

    baseline: str
    candidate: str


class GatePolicyRecord(TypedDict):
    """A release rule as JSON (``GatePolicy.model_dump``), in a gate result or a stored suite."""

    primary: PrimaryRecord | None
    rule: str
    """'non-inferiority', 'improvement' or 'threshold'."""
    bar: float | None
    sequential: bool
    looks: int | None
    margin: float | None
    sides: str
    """'one-sided' or 'two-sided'."""
    confidence: float
    max_unresolved: float
    max_retry_gap: float
    must_never: list[str]
    n_resamples: int
    quantity: NotRequired[str]  # 'raw' or 'corrected' (absent in suites stored before it)


class GateResult(TypedDict):
    """The gate's verdict with every number behind it (``evaluate_gate``)."""

    run_id: str | None
    verdict: str
    verdict_label: str
    may_ship: bool
    blocked_by_must_never: bool
    exit_code: int
    reasons: list[str]
    policy: GatePolicyRecord
    """The policy as written (its pydantic dump), so the result says what rule it applied."""
    baseline: str | None
    candidate: str
    must_never: list[MustNeverCheck]
    coverage: Coverage
    balance: Balance
    primary: Comparison | None
    threshold: ThresholdCheck | None
    full_suite: NotRequired[Interval | None]  # a subset run: the full-suite estimate judged
    sequential: Sequential | None
    noise_floor: NoiseFloor | None
    screens: Screens | None
    design: DesignSummary
    warnings: list[str]
    cannot_establish: list[str]
    quantity: GateQuantity
    suite: NotRequired[str]
    """Set by ``gate_run``: the run's suite, and where the policy came from."""
    policy_source: NotRequired[str]


class Fingerprint(TypedDict):
    """What pairing two runs of an arm needs to be equal: tasks, grader versions, images."""

    tasks: list[str]
    graders: list[str]
    images: list[str]


class Headline(Interval, total=False):
    """An arm's success rate in one run (mean of per-task rates, the shared interval)."""

    rate: float | None
    """The same number as ``estimate``, under the name older readers of the JSON use."""
    warning: str | None
    n_tasks: int
    n_clusters: int
    n_trials: int
    basis: str
    """'full run', or for a subset run the label of its full-suite estimate (the rate and
    interval are then that estimate: both estimate the same full-suite quantity)."""
    suite_se: float | None  # as an estimate of the suite's rate: trial noise / design SE
    subset_method: str | None  # None for a full run, else 'random', 'stratified', 'anchors'
    suite_tasks: int  # a subset run's N: the suite's tasks its estimate is about


class Move(TypedDict, total=False):
    """The change of an arm from its previous run: paired when pairable, else why not."""

    from_run: str
    paired: bool
    cannot_pair: list[str]
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    unit: str
    level: float
    """The interval's confidence."""
    se: float
    basis: str
    """Where a run is a subset run and the tasks differ: 'difference of full-suite estimates
    (full run → random 10 of 40), ...' (unpaired: ``paired`` False, no ``cannot_pair``)."""
    look: int  # under ``--sequential``: this run's night in the arm's season
    call: str
    """'regression', 'improvement' or 'none': read off the interval, or under
    ``--sequential`` the detector's ('regression' once its evidence reaches ``alarm_at``)."""
    evidence: float
    """Under ``--sequential``: the e-detector R after this night."""
    alarm_at: float
    beyond_noise_floor: bool | None


class HistoryArm(Headline, total=False):
    arm: str
    cost_usd: float | None
    cost_known_trials: int
    images: str
    graders: str
    move: Move | None


class HistoryRun(TypedDict):
    run_id: str
    started_at: str | None
    status: str
    config: str
    """The first 8 characters of the run's config hash."""
    noise_floor: NoiseFloor | None
    arms: list[HistoryArm]


class History(TypedDict):
    """``harness history SUITE``: the suite's runs oldest first, each arm's rate and move."""

    runs: list[HistoryRun]
    confidence: float
    sequential: bool
    schedule: str
    suite: NotRequired[str]


@final
class TasksNeeded(TypedDict):
    """Tasks for an unpaired and a paired comparison to detect ``base`` → ``base + lift``."""

    base: float
    lift: float
    alpha: float
    power: float
    unpaired_per_arm: int  # two independent runs (formula; no gate reads an unpaired design)
    paired: list[dict[str, float | int | None]]
    """Per discordance: tasks (None: more than the search limit), the gate's simulated power
    there, win rate, discordant tasks."""
    discordance_assumed: bool
    rule: str  # the gate rule and test the plan simulated
    model: str
    simulated_runs: int


@final
class Sensitivity(TypedDict, total=False):
    """The smallest lift a run could have detected, from its tasks and discordance."""

    n_tasks: int
    n_clusters: int
    baseline_rate: float
    baseline_interval: list[float | None]
    baseline_method: str | None
    discordance: float
    discordant_tasks: int
    alpha: float
    power: float
    mde: float | None
    """The smallest lift the gate passes with ``power`` (None: not reachable below 100%)."""
    simulated_power: float
    simulated_runs: int
    heterogeneity: float
    rule: str
    model: str
    run_id: str
    baseline: str | None
    candidate: str


@final
class ThresholdPlan(TypedDict):
    """Tasks needed to show the rate exceeds a bar (one-sided)."""

    rate: float
    bar: float
    alpha: float
    power: float
    sides: str
    design_effect: float
    tasks: int | None
    """Tasks needed (None: more than the search limit)."""
    independent_tasks: int | None
    simulated_power: float
    simulated_runs: int
    rule: str
    model: str
