"""`harness anchors fit|check SUITE`: 2PL fits of a suite's tasks from the store's history,
and how well anchor subsets predicted the full runs it holds (leave one run out)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from harness.commands.options import StoreOpt

anchors = typer.Typer(
    help="Anchor sets: fit 2PL to a suite's history, check anchor subsets against it.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(anchors, name="anchors")


def _say(text: str) -> None:
    """A line wrapped at the terminal's width (continuations indented)."""
    import shutil
    import textwrap

    width = min(shutil.get_terminal_size().columns, 80)
    typer.echo(textwrap.fill(text, width, subsequent_indent="  ", break_on_hyphens=False))


SuiteArg = Annotated[str, typer.Argument(metavar="SUITE", help="The suite file.")]


def _current(suite_file: str):
    """(suite name, task id → task hash) of the suite as it is now."""
    from harness.config.loader import load_suite
    from harness.config.subset import task_hash

    loaded = load_suite(suite_file, whole=True)
    hashes = {
        t.task.id: task_hash(t.task.model_dump(mode="json", by_alias=True)) for t in loaded.tasks
    }
    return loaded.suite.name, hashes


def _history(suite_file: str, store_url: str | None):
    from harness.anchors.history import read_history
    from harness.store.refs import open_for_reading

    name, current = _current(suite_file)
    store = open_for_reading(store_url)
    history = read_history(store, name, current)
    if len(history.systems) < 2:
        store.close()
        typer.echo(
            f"harness anchors: suite '{name}' has {len(history.systems)} finished arm-run(s) "
            "of today's tasks in the store; a fit needs at least 2 (more than 20 to be useful)",
            err=True,
        )
        raise typer.Exit(2)
    return name, current, store, history


@anchors.command()
def fit(
    suite: SuiteArg,
    store: StoreOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="The fit record as JSON.")] = False,
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the split of the runs into the two halves.")
    ] = 0,
) -> None:
    """Fit 2PL (per-task difficulty and discrimination) to every finished run of SUITE in
    the store and store it as the suite's next fit version. The runs are split at random
    in two halves: one half's fit picks anchors, the other's scores a run on them (one fit
    doing both over-states the chosen tasks and its intervals undercover)."""
    from harness.anchors.fits import save_fit
    from harness.anchors.history import fit_record

    name, current, db, history = _history(suite, store)
    record = fit_record(history, current, seed)
    version = save_fit(db, name, record)
    db.close()
    quality = record["quality"]  # type: ignore[typeddict-item]
    if as_json:
        typer.echo(json.dumps({**record, "version": version}, indent=2))
        return
    se_b = sorted(quality["se_b"].values())
    runs = len({r for r, _ in history.systems})
    _say(
        f"fit v{version} of suite {name}: {len(history.tasks)} tasks from "
        f"{len(history.systems)} systems (arms of {runs} runs); "
        f"{'converged' if quality['converged'] else 'NOT converged'} in "
        f"{quality['iterations']} EM iterations"
    )
    split = record["split"]
    _say(
        f"split (seed {split['seed']}, by {split['unit']}): anchors chosen by a fit of "
        f"{len(split['choose'])} systems, scored by a fit of the other {len(split['score'])}"
    )
    if len(split["score"]) < 10:
        _say(
            f"the scoring half has {len(split['score'])} systems: below 10, anchor intervals "
            "undercover somewhat (89-93% at 5 on a planted 2PL suite, "
            "benchmarks/anchor_choice.py); more runs of the suite make the fit firmer"
        )
    _say(f"task SE of difficulty b: median {se_b[len(se_b) // 2]:.2f}, largest {se_b[-1]:.2f}")
    unplaced = quality["unplaced"]
    if unplaced:
        shown = ", ".join(f"{t} ({why})" for t, why in list(unplaced.items())[:5])
        more = f" and {len(unplaced) - 5} more" if len(unplaced) > 5 else ""
        _say(f"not placed by the data ({len(unplaced)}; held by the prior): {shown}{more}")
    _say(f"use it: subset: {{method: anchors, n: N}} (or fit: {version})")


@anchors.command()
def check(
    suite: SuiteArg,
    n: Annotated[int, typer.Option("--n", min=1, help="Anchor tasks per held-out run.")] = 20,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999)] = 0.95,
    store: StoreOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Every row as JSON.")] = False,
) -> None:
    """Leave one run out: predict each full run's score from n anchors chosen by a fit of
    the other runs (and from n random tasks), and compare with the score it had."""
    from harness.anchors.history import check_summary, leave_one_run_out

    name, _, db, history = _history(suite, store)
    db.close()
    if n > len(history.tasks):
        typer.echo(
            f"harness anchors check: --n {n} but the suite has {len(history.tasks)}", err=True
        )
        raise typer.Exit(2)
    checks = leave_one_run_out(history, n, confidence)
    if not checks:
        typer.echo(
            "harness anchors check: no full run to hold out (each needs every current task, "
            "and at least two other arm-runs to fit on)",
            err=True,
        )
        raise typer.Exit(2)
    summary = check_summary(checks)
    if as_json:
        rows = [c.__dict__ for c in checks]
        typer.echo(json.dumps({"n": n, "rows": rows, "summary": summary}, indent=2))
        return
    _say(
        f"suite {name}: {len(checks)} held-out full runs (arms), {n} of "
        f"{len(history.tasks)} tasks each; truth: the run's own full score"
    )
    typer.echo(f"{'subset':<22}{'mean abs error':>16}{'coverage':>10}{'mean width':>12}")
    for method, label in (("anchors", "anchors (2PL, model)"), ("random", "random (design)")):
        s = summary[method]
        typer.echo(
            f"{label:<22}{100 * s['mae']:>14.1f} pts{100 * s['coverage']:>9.0f}%"
            f"{100 * s['width']:>10.1f} pts"
        )
