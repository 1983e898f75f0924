"""Human labels and the judge against them: `harness label` and `harness judge-agreement`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.commands.options import RUN_FORMS, StoreOpt


def register(app: typer.Typer) -> None:
    app.command(name="label")(label)
    app.command(name="judge-agreement")(judge_agreement)


def label(
    run_ref: Annotated[
        str, typer.Argument(metavar="RUN", help=f"The run ({RUN_FORMS}).", show_default=False)
    ],
    labels_file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="JSON lines: {trial: ID} or {arm, task, trial_index}, passed: true|false, "
            "and optionally criterion, labeller, note.",
            show_default=False,
        ),
    ],
    labeller: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="NAME", help="Who labelled, for lines that do not say."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Store people's labels of a run's trials from a labels file (beside the trials; the
    judge's verdicts are never changed). A person's new label of a trial replaces theirs."""
    from harness.store import Store, now, resolve_url
    from harness.store.labels import put_labels, read_labels_file
    from harness.store.refs import find_run, no_arm

    db = Store(resolve_url(store), create=False)
    try:
        run = find_run(db, no_arm(run_ref, "label", "labels name their trials"))
        labels = read_labels_file(labels_file, db.engine, run.id, labeller)
        written = put_labels(db.engine, labels, now())
    finally:
        db.close()
    typer.echo(f"stored {written} labels for run {run.id}")


def judge_agreement(
    run_ref: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(
            metavar="RUN", help=f"The run ({RUN_FORMS}; default: the latest).", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown on stdout.")] = False,
    confidence: Annotated[float, typer.Option(metavar="LEVEL", help="Interval level.")] = 0.95,
    store: StoreOpt = None,
) -> None:
    """The judge against people's labels: accuracy, sensitivity, specificity, precision,
    F1, Cohen's kappa (and Krippendorff's alpha among several labellers), each with n and an
    interval, the confusion matrix; pass rates corrected for the judge's error; the judge's
    self-disagreement and its cost beside the agent's."""
    from harness.analysis.judging import run_judge_summary
    from harness.report.render.judging import judge_markdown, judge_text
    from harness.store.refs import find_run, no_arm, open_for_reading

    db = open_for_reading(store)
    try:
        run = find_run(db, no_arm(run_ref, "judge-agreement", "it covers every arm"))
        summary = {"run_id": run.id, **run_judge_summary(db, run, confidence)}
    finally:
        db.close()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    elif markdown:
        typer.echo(judge_markdown(summary), nl=False)
    else:
        typer.echo(judge_text(summary), nl=False)
