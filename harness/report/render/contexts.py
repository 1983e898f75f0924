"""The shapes the HTML report's templates read: one TypedDict per page section.

Why TypedDicts (not dataclasses): the sections hold interval records the templates pass to
the ``interval`` filter, which reads dicts, and Jinja reads keys and attributes alike; a
TypedDict keeps the runtime values plain dicts while mypy checks every key the section
builders (``html``, ``html_sections``) and the plots (``plots``) write or read.
"""

from __future__ import annotations

from typing import TypedDict

from harness.release.records import Comparison, NoiseFloor
from harness.report.records import (
    ArmReport,
    Calibration,
    Cause,
    DiagramBin,
    ErrorKind,
    PassAtK,
    SliceRow,
    Success,
    Tokens,
)
from harness.stats.records import Interval


class PlotFigure(TypedDict, total=False):
    """One drawn plot (``macros.figure``), or only ``missing`` when it could not be drawn."""

    name: str
    svg: str
    """SVG markup (a ``markupsafe.Markup``: the one unescaped string of a section)."""
    caption: str
    missing: str | None
    """Why there is no plot (matplotlib not installed, no data), else None."""


class ForestRow(TypedDict):
    """One row of the per-class deltas: a delta with its interval (overall first)."""

    label: str
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int | None
    overall: bool
    warning: str | None


class ForestSection(TypedDict):
    plot: PlotFigure
    rows: list[ForestRow]
    noise: tuple[float | None, float | None] | None
    """The A/A noise floor's interval, drawn as a band (when both ends are finite)."""
    noise_row: NoiseFloor | None
    note: str


class PasskCurve(TypedDict):
    """One arm's observed pass^k / pass@k and the beta-binomial predictions."""

    pass_hat_k: list[PassAtK]
    pass_at_k: list[PassAtK]
    pred_hat: list[PassAtK]
    pred_at: list[PassAtK]


class PasskRow(TypedDict):
    arm: str
    by_k: list[PassAtK | None]
    """Observed pass^k at k = 1..trials (None where not reported)."""


class PasskSection(TypedDict):
    plot: PlotFigure
    ks: list[int]
    rows: list[PasskRow]
    note: str


class CostPoint(TypedDict):
    """An arm at its mean cost per trial (USD) and success rate."""

    arm: str
    cost: float
    estimate: float
    lo: float | None
    hi: float | None


class CostRow(TypedDict):
    arm: str
    per_trial: Interval
    per_success: float | None
    known: int | None
    trials: int | None
    tokens: Tokens | None
    mean_latency: float | None
    p95: float | None
    success: Success


class CostSection(TypedDict):
    plot: PlotFigure
    rows: list[CostRow]
    note: str | None


class CalibrationArm(TypedDict):
    n: int
    ece: float | None
    bins: list[DiagramBin]
    record: Calibration


class CalibrationSection(TypedDict):
    plot: PlotFigure
    arms: dict[str, CalibrationArm]
    note: str


class InfraRow(TypedDict):
    arm: str
    counts: list[int]
    """Trials per status, in the section's ``statuses`` order."""
    retried: int
    crash_rate: Interval | None


class ArmCause(Cause):
    arm: str


class InfraSection(TypedDict):
    plot: PlotFigure
    statuses: list[str]
    rows: list[InfraRow]
    kinds: list[ErrorKind]
    causes: list[ArmCause]
    agent_failures: list[ArmCause]
    agent_other: dict[str, int]
    note: str


class TaskCell(TypedDict):
    text: str
    """passed/counted trials."""
    unresolved: int
    rate: str
    href: str | None


class TaskTableRow(TypedDict):
    cls: str
    """CSS classes: 'unstable', 'discordant'."""
    task_id: str
    href: str | None
    task_class: str
    cluster: str
    cells: list[TaskCell | None]
    delta: float | None
    discordant: int


class TaskTable(TypedDict):
    arms: list[str]
    paired: bool
    rows: list[TaskTableRow]
    note: str


class HeaderArm(TypedDict):
    name: str
    color: str
    role: str | None
    agent: str | None
    model: str
    params: str
    """The agent's params as short JSON."""


class Header(TypedDict):
    run_id: str
    description: str
    kv: list[tuple[str, object]]
    images: list[tuple[str, str | None]]
    arms: list[HeaderArm]


class GateSection(TypedDict):
    verdict: str
    cls: str
    """CSS class of the verdict: 'v-pass', 'v-fail' or 'v-inconclusive'."""
    reasons: list[str]
    policy: str | None
    policy_source: str
    primary: Comparison | None
    baseline: str | None
    candidate: str | None
    checks: list[tuple[str, str, str]]
    """(check, status, detail)."""
    warnings: list[str]
    note: str


class HeadlineRow(TypedDict):
    arm: str
    color: str
    success: Success
    n: int | None
    unit: str
    a: ArmReport


class ClassSlices(TypedDict):
    arms: list[str]
    names: list[str]
    by_arm: dict[str, dict[str, SliceRow]]


class HeadlineSection(TypedDict):
    rows: list[HeadlineRow]
    comparison: Comparison | None
    comparison_extra: str
    warnings: list[str]
    slices: ClassSlices | None
    note: str


class JudgeSection(TypedDict):
    """The judge's head line and its blocks (``harness.report.render.judging``)."""

    head: str
    blocks: list[tuple[str, list[str]]]


class PairwiseSection(TypedDict):
    """The pairwise judge's head line and its blocks (``harness.report.render.pairwise``)."""

    head: str
    blocks: list[tuple[str, list[str]]]


class ReportSections(TypedDict):
    """Every section of ``report.html.j2`` (None: the section is left out)."""

    header: Header
    gate: GateSection | None
    headline: HeadlineSection
    forest: ForestSection | None
    passk: PasskSection | None
    cost: CostSection | None
    calibration: CalibrationSection | None
    infra: InfraSection | None
    measures: list[tuple[str, list[str]]] | None
    """Per arm: its measures lines (``harness.report.render.measures``)."""
    judge: JudgeSection | None
    pairwise: PairwiseSection | None
    tasks: TaskTable | None
