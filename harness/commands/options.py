"""Options and arguments several commands share, declared once so their help reads alike.

Only typer is imported here (``harness --help`` must stay fast).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

RUN_FORMS = "latest, latest~N, a run id or a unique start of one"
SANDBOXES = (
    "auto (docker when a daemon answers, else bwrap), docker, bwrap, unsafe-local (no "
    "isolation), faulty (fault injection) or module:Class"
)
"""The sandbox backends as help texts list them (a test checks this against the registry)."""

REPORT_SECTIONS = (
    "method",
    "unresolved",
    "pass-k",
    "slices",
    "measures",
    "reliability",
    "usage",
    "steps",
    "judge",
    "pairwise",
    "comparison",
    "versions",
)
"""The report's sections after its summary, in the order ``harness report --full`` prints
them (``harness.report.render.terminal``); here so ``harness report --help`` lists them."""


def section_names(values: list[str]) -> list[str]:
    """``--section`` values (repeated, or comma-separated) checked against the sections."""
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in REPORT_SECTIONS]
    if unknown:
        raise typer.BadParameter(
            f"no section {unknown[0]!r}; the sections are {', '.join(REPORT_SECTIONS)}",
            param_hint="--section",
        )
    return names


StoreOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional
    typer.Option(
        "--store",
        metavar="URL",
        help="SQLAlchemy URL of the store (default: $HARNESS_STORE, else "
        "sqlite:///.harness/harness.db).",
    ),
]

LatestRunArg = Annotated[
    Optional[str],  # noqa: UP045
    typer.Argument(
        metavar="RUN",
        help=f"The run ({RUN_FORMS}; default latest).",
        show_default=False,
    ),
]

QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]

SandboxOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--sandbox", metavar="NAME", help=f"Sandbox backend: {SANDBOXES}."),
]
ConcurrencyOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--concurrency", metavar="N", help="Trials running at once."),
]
TaskGlobOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--task", metavar="GLOB", help="Only tasks whose id matches (repeatable)."),
]
LimitOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--limit", metavar="N", min=1, help="Only the first N tasks (after --task)."),
]

SubsetOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--subset",
        metavar="METHOD:N",
        help="Run a subset and estimate the full suite's score: random, stratified, anchors "
        "or midrange, with N tasks or P% (random:50, stratified:20%).",
    ),
]


def run_arg(help_text: str) -> object:
    """A required RUN argument with the forms every command accepts in its help."""
    return typer.Argument(metavar="RUN", help=f"{help_text} ({RUN_FORMS}).", show_default=False)
