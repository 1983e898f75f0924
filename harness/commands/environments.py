"""Commands about tasks and environments: validate, lock, gc."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness import exitcodes
from harness.commands.options import (
    SANDBOXES,
    ConcurrencyOpt,
    LimitOpt,
    QuietOpt,
    SandboxOpt,
    StoreOpt,
    TaskGlobOpt,
)

SuiteArg = Annotated[
    Path, typer.Argument(metavar="SUITE", help="The suite file.", show_default=False)
]


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(lock)
    app.command()(gc)


def lock(
    suite: SuiteArg,
    sandbox: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="NAME", help=f"Sandbox backend (default: the suite's): {SANDBOXES}."),
    ] = None,
) -> None:
    """Pin every environment's image and write SUITE.lock.json (image ids, base digests)."""
    import anyio

    from harness.lockfile import write_lock
    from harness.resolve import load

    resolved = load(suite, {"sandbox": sandbox} if sandbox else None)
    assert resolved.sandbox is not None
    backend = resolved.sandbox.name
    provider = resolved.sandbox.open()

    async def main() -> Path:
        try:
            return await write_lock(resolved, provider, backend)
        finally:
            await provider.close()

    path = anyio.run(main)
    typer.echo(f"wrote {path} ({len(resolved.environments)} environments, sandbox {backend})")


def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list what would be removed.")
    ] = False,
) -> None:
    """Remove the containers and per-trial directories your harness runs left behind when
    their process is gone (never another user's, never a live run's)."""
    from harness.sandbox import trial_dirs
    from harness.sandbox.docker import docker_available
    from harness.sandbox.docker_gc import gc as remove_leftovers

    dirs = trial_dirs.leftovers() if dry_run else trial_dirs.gc()
    verb = "would remove" if dry_run else "removed"
    typer.echo(f"{verb} {len(dirs)} trial director(y/ies)" + "".join(f"\n  {d}" for d in dirs))
    if not docker_available():
        typer.echo("no Docker daemon answers: no containers to collect", err=True)
        return
    import docker
    from harness.sandbox.docker_gc import is_leftover, ours

    client = docker.from_env()
    try:  # the plain listing: no per-container inspect that a removal in between would fail
        listed = client.api.containers(all=True, filters={"label": "harness=1"})
    finally:
        client.close()
    labels = [(c["Id"], c.get("Labels") or {}) for c in listed]
    found = [cid[:12] for cid, lb in labels if is_leftover(lb, None)]
    others = sum(1 for _, lb in labels if ours(lb) is False)
    if dry_run:
        typer.echo("\n".join(found) or "no containers to remove")
    else:
        removed = remove_leftovers()
        typer.echo(
            f"removed {len(removed)} container(s)"
            + (": " + ", ".join(r[:12] for r in removed) if removed else "")
        )
    if others:
        typer.echo(
            f"left {others} harness container(s) of other users (or of an older harness that "
            "did not label its user): not yours to collect",
            err=True,
        )


# long: the signature declares one typer option per ``harness validate`` flag.
def validate(
    suite: SuiteArg,
    sandbox: SandboxOpt = None,
    concurrency: ConcurrencyOpt = None,
    task: TaskGlobOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    judge_checks: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--judge-checks",
            metavar="RUN",
            help="Instead: re-ask the judge of RUN's judged trials unchanged, with the answer "
            "padded and with the criteria reversed; report how often verdicts move.",
        ),
    ] = None,
    pairwise: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--pairwise",
            metavar="FILE",
            help="--judge-checks: also check this pairwise judge file's judgements of RUN "
            "(default: the suite's pairwise: judge, when it has one).",
        ),
    ] = None,
    store: StoreOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="--judge-checks: JSON on stdout.")
    ] = False,
) -> None:
    """Prove every task solvable (oracle) and every grader strict (noop floor, mutants)."""
    from rich.console import Console
    from rich.table import Table

    from harness.resolve import load

    if judge_checks is not None:
        _judge_checks(suite, judge_checks, store, as_json, pairwise)
        return
    from harness.stats import wilson_interval
    from harness.validate import validate_suite

    console = Console()
    resolved = load(suite, {"sandbox": sandbox, "task": task, "limit": limit})
    from harness.preflight import preflight

    preflight(resolved)
    report = validate_suite(resolved, sandbox, concurrency, progress=not quiet)
    console.print(f"[bold]Validated {report.tasks} tasks[/] of suite {resolved.suite.name}")
    if report.broken:
        table = Table(
            title="Broken tasks (the reference solution does not pass)", title_justify="left"
        )
        for col in ("task", "status", "reason"):
            table.add_column(col)
        for b in report.broken:
            table.add_row(b["task"], b["status"], b["reason"])
        console.print(table)
    else:
        console.print(f"[green]oracle: all {report.tasks} tasks pass their graders[/]")

    table = Table(title="Do-nothing floor (noop agent) per class", title_justify="left")
    for col in ("class", "noop passes", "rate (95% Wilson)"):
        table.add_column(col)
    for cls, (passes, n) in sorted(report.noop_by_class.items()):
        lo, hi = wilson_interval(passes, n)
        style = "yellow" if passes / n > 0.2 else ""
        table.add_row(
            cls,
            f"{passes}/{n}",
            f"[{style}]{passes / n:.0%} [{lo:.0%}, {hi:.0%}][/]"
            if style
            else f"{passes / n:.0%} [{lo:.0%}, {hi:.0%}]",
        )
    console.print(table)
    if report.noop_passes:
        console.print(
            f"[yellow]warning:[/] {len(report.noop_passes)} task(s) pass when the agent "
            "does nothing (fine for 'expect no change' tasks; check the others): "
            + ", ".join(report.noop_passes[:10])
            + (" ..." if len(report.noop_passes) > 10 else "")
        )

    kinds = sorted(report.mutant_runs)
    table = Table(
        title="Mutants: times each grader let a mutant through (overall verdict in the last row)",
        title_justify="left",
    )
    table.add_column("grader")
    for k in kinds:
        table.add_column(f"{k} (n={report.mutant_runs[k]})")
    for grader, counts in sorted(report.grader_false_passes.items()):
        table.add_row(grader, *[str(counts.get(k, "—")) for k in kinds])
    overall = {k: sum(1 for f in report.false_passes if f["mutant"] == k) for k in kinds}
    table.add_row(
        "[bold]task verdict[/]",
        *[f"[{'red' if overall[k] else 'green'}]{overall[k]}[/]" for k in kinds],
    )
    console.print(table)
    for f in report.false_passes:
        console.print(f"[red]false pass:[/] mutant {f['mutant']} passed task {f['task']}")
    for e in report.errors:
        console.print(
            f"[red]no verdict:[/] {e['agent']} on {e['task']}: {e['status']} {e['reason']}"
        )
    if not report.ok:
        console.print("[red bold]validation failed[/]")
        raise typer.Exit(exitcodes.VALIDATION_FAILED)
    console.print("[green bold]validation passed[/]: every task solvable, every mutant caught")


def _judge_checks(
    suite: Path, run_ref: str, store: str | None, as_json: bool, pairwise: Path | None
) -> None:
    """``validate --judge-checks RUN``: the judges' repeat, position and length checks."""
    import json

    from harness.errors import GraderError
    from harness.judge_checks import judge_checks, judge_checks_text, pairwise_setup
    from harness.resolve import load
    from harness.store.refs import find_run, open_for_reading

    resolved = load(suite, {})
    db = open_for_reading(store)
    try:
        run = find_run(db, run_ref)
        report = judge_checks(db, resolved, run, pairwise_setup(run, pairwise))
    except GraderError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exitcodes.ENVIRONMENT) from None
    finally:
        db.close()
    summary = report.as_json(0.95)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        typer.echo(judge_checks_text(summary), nl=False)
