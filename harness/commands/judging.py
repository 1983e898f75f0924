"""Human labels and the judge against them: `harness label` and `harness judge-agreement`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from harness.commands.options import RUN_FORMS, LatestRunArg, StoreOpt

if TYPE_CHECKING:
    from harness.pairwise.judging import Outcome
    from harness.pairwise.setup import PairwiseJudgeSetup
    from harness.store import Store


def register(app: typer.Typer) -> None:
    app.command(name="label")(label)
    app.command(name="judge-agreement")(judge_agreement)
    app.command(name="pairwise")(pairwise)


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
    run_ref: LatestRunArg = None,
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

    _check_level(confidence)
    db = open_for_reading(store)
    try:
        run = find_run(db, no_arm(run_ref, "judge-agreement", "it covers every arm"))
        summary = {"run_id": run.id, **run_judge_summary(db, run, confidence)}
    finally:
        db.close()
    how = "json" if as_json else "markdown" if markdown else "text"
    _emit(summary, how, judge_text, judge_markdown)


def pairwise(
    refs: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(
            metavar="RUN | RUN:ARM...",
            help=f"One run (its arms; RUN is {RUN_FORMS}), or two sides or more as RUN:ARM "
            "(of one run or several; a run with one arm needs no :ARM). Default: latest.",
            show_default=False,
        ),
    ] = None,
    judge_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--judge",
            metavar="FILE",
            help="The pairwise judge (YAML): model (as a judge grader's), api, question, "
            "rubric, reads (default for RUN: the judge its suite's pairwise: declares).",
            show_default=False,
        ),
    ] = None,
    arms: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--arm", metavar="ARM", help="An arm of RUN to compare (repeat; default: all)."
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(metavar="N", min=1, max=64, help="Judge calls at once.")
    ] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown on stdout.")] = False,
    confidence: Annotated[float, typer.Option(metavar="LEVEL", help="Interval level.")] = 0.95,
    seed: Annotated[int, typer.Option(metavar="SEED", help="Seed of the bootstrap.")] = 0,
    store: StoreOpt = None,
) -> None:
    """Compare arms' outputs with a judge model: every pair of arms (or of RUN:ARM sides
    across runs) on every task and trial index both ran, judged twice with the order
    swapped. Prints win rates with intervals, the judge's position bias and, with three or
    more sides, Bradley-Terry ratings. Runs whose shared tasks differ (definition, budget,
    environment, image), or sides sharing no task, are refused (exit 2). Stored judgements
    of the same judge setup are reused, never paid for twice."""
    from harness.errors import ConfigError
    from harness.pairwise.setup import load_setup
    from harness.store import Store, resolve_url
    from harness.store.refs import RunRef

    _check_level(confidence)
    refs = refs or []
    across = len(refs) > 1 or any(RunRef.parse(r).arm is not None for r in refs)
    if across and judge_file is None:
        raise ConfigError("command line", "--judge", "required: the pairwise judge file")
    if across and arms:
        raise ConfigError("command line", "--arm", "with RUN:ARM sides, name every arm there")
    setup = load_setup(judge_file) if judge_file is not None else None
    db = Store(resolve_url(store), create=False)
    try:
        if setup is not None and across:
            summary = _across_summary(db, refs, setup, concurrency, confidence, seed)
        else:
            summary = _run_summary(db, refs, arms, setup, concurrency, confidence, seed)
    finally:
        db.close()
    how = "json" if as_json else "markdown" if markdown else "text"
    from harness.report.render.pairwise import pairwise_markdown, pairwise_text

    _emit(summary, how, pairwise_text, pairwise_markdown)


def _run_summary(
    db: Store,
    refs: list[str],
    arms: list[str] | None,
    setup: PairwiseJudgeSetup | None,
    concurrency: int,
    confidence: float,
    seed: int,
) -> dict[str, Any]:
    """``harness pairwise RUN``: every pair of the run's chosen arms (``setup`` None: with
    the judge the run's suite declares)."""
    from harness.errors import ConfigError
    from harness.pairwise.judging import judge_run
    from harness.pairwise.setup import declared_judge
    from harness.pairwise.summary import clusters_of, pairwise_summary
    from harness.store.refs import find_run

    run = find_run(db, refs[0] if refs else None)
    if setup is None:
        declared = declared_judge(run)
        if declared is None:
            raise ConfigError(
                "command line",
                "--judge",
                f"required: the pairwise judge file (run {run.id}'s suite declares no "
                "pairwise judge)",
            )
        setup, arms = declared[0], arms or declared[1]
    chosen = list(run.arms) if not arms else list(dict.fromkeys(arms))
    unknown = [a for a in chosen if a not in run.arms]
    if unknown:
        raise ConfigError(
            "command line",
            "--arm",
            f"run {run.id} has no arm '{unknown[0]}' (arms: {', '.join(run.arms)})",
        )
    if len(chosen) < 2:
        raise ConfigError("command line", "--arm", "pairwise judging needs two arms or more")
    outcome = judge_run(db, run, setup, chosen, concurrency)
    clusters = clusters_of(run, db.trials(run.id))
    summary = pairwise_summary(outcome.judgements, chosen, clusters, confidence, seed)
    return {"run_id": run.id, **summary, **_calls(outcome)}


def _across_summary(
    db: Store,
    refs: list[str],
    setup: PairwiseJudgeSetup,
    concurrency: int,
    confidence: float,
    seed: int,
) -> dict[str, Any]:
    """``harness pairwise RUN_A:ARM RUN_B:ARM ...``: every pair of the sides."""
    from harness.pairwise.across import judge_across
    from harness.pairwise.summary import pairwise_summary

    got = judge_across(db, refs, setup, concurrency)
    summary = pairwise_summary(
        got.outcome.judgements, got.sides, got.clusters, confidence, seed, across=True
    )
    return {
        "run_id": None,
        "runs": got.runs,
        "notes": got.notes,
        **summary,
        **_calls(got.outcome),
    }


def _calls(outcome: Outcome) -> dict[str, Any]:
    """What this invocation asked the judge and what it reused."""
    return {
        "new_calls": outcome.new_calls,
        "reused": outcome.reused,
        "new_spend": outcome.spend,
        "skipped": outcome.skipped,
    }


def _check_level(confidence: float) -> None:
    """--confidence lies strictly between 0 and 1 (checked before any judge call)."""
    from harness.errors import ConfigError

    if not 0 < confidence < 1:
        raise ConfigError(
            "command line",
            "--confidence",
            f"must lie between 0 and 1 (e.g. 0.95), got {confidence}",
        )


def _emit(
    summary: dict[str, Any],
    how: str,
    text: Callable[[dict[str, Any]], str],
    markdown: Callable[[dict[str, Any]], str],
) -> None:
    """A summary on stdout as JSON, Markdown or the terminal view."""
    if how == "json":
        typer.echo(json.dumps(summary, indent=2))
    else:
        typer.echo((markdown if how == "markdown" else text)(summary), nl=False)
