"""Commands that bring other benchmarks in and send results out: `harness import tau-bench`,
`harness import harbor`, `harness export`, `harness import-log`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness import exitcodes

importer = typer.Typer(
    help="Import another benchmark's tasks as an environment and a suite.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(importer, name="import")
    app.command()(export)
    app.command("import-log")(import_log)


def _config_error(exc: Exception) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(exitcodes.BAD_CONFIG)


@importer.command("tau-bench")
def tau_bench(
    path: Annotated[Path, typer.Argument(help="A tau-bench checkout (the repository root).")],
    domain: Annotated[str, typer.Option(help="retail or airline.")] = "retail",
    split: Annotated[str, typer.Option(help="test, train or dev (airline has test).")] = "test",
    out: Annotated[Path, typer.Option(help="Where environments/ and tasks/ are written.")] = Path(
        "."
    ),
) -> None:
    """Write environments/tau-bench-DOMAIN and tasks/tau-bench-DOMAIN/{suite,check-suite}.yaml."""
    from harness.errors import ConfigError
    from harness.importers.tau_bench import import_tau_bench

    try:
        done = import_tau_bench(path, domain, split, out)
    except ConfigError as exc:
        _config_error(exc)
        return
    typer.echo(
        f"imported {done.tasks} tasks of tau-bench {domain} ({split}): {done.with_outputs} with "
        f"required outputs, {done.no_change} whose goal is no change"
    )
    typer.echo(f"environment: {done.environment}")
    typer.echo(f"check it:    harness run {done.check_suite}")
    typer.echo(f"run a model: harness run {done.suite}")


@importer.command("harbor")
def harbor(
    path: Annotated[Path, typer.Argument(help="A Harbor task directory, or a folder of them.")],
    out: Annotated[Path, typer.Option(help="Where environments/ and tasks/ are written.")] = Path(
        "."
    ),
) -> None:
    """Write environments/harbor-NAME and tasks/harbor/{tasks,suite}.yaml; print what was
    imported and, one line each, what was refused and why."""
    from harness.errors import ConfigError
    from harness.importers.harbor import import_harbor

    try:
        done = import_harbor(path, out)
    except ConfigError as exc:
        _config_error(exc)
        return
    for name in done.imported:
        typer.echo(f"imported  {name}")
    for name, why in done.refused.items():
        typer.echo(f"refused   {name}: needs {why}")
    typer.echo(f"{len(done.imported)} imported, {len(done.refused)} refused")
    if done.suite is not None:
        typer.echo(f"run them: harness run {done.suite}")


def export(
    run_id: Annotated[str, typer.Argument(help="The run id (see `harness runs`).")],
    format: Annotated[str, typer.Option("--format", help="jsonl or inspect.")] = "jsonl",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")
    ] = None,
    store: Annotated[
        str | None, typer.Option("--store", help="SQLAlchemy URL (default $HARNESS_STORE).")
    ] = None,
) -> None:
    """Write a run as JSON lines (every row, attempt, event; readable by import-log) or as
    an Inspect AI eval log."""
    import sys

    from harness.errors import ConfigError
    from harness.store import Store, resolve_url

    if format not in ("jsonl", "inspect"):
        _config_error(ValueError(f"--format: unknown format '{format}' (jsonl, inspect)"))
    db = Store(resolve_url(store))
    try:
        if format == "jsonl":
            from harness.export.jsonl import write_jsonl

            if output is None:
                n = write_jsonl(db, run_id, sys.stdout)
            else:
                with output.open("w") as fh:
                    n = write_jsonl(db, run_id, fh)
        else:
            from harness.export.inspect import write_inspect

            if output is None:
                _config_error(ValueError("--format inspect needs --output FILE.json"))
                return
            n = write_inspect(db, run_id, output)
    except ConfigError as exc:
        _config_error(exc)
        return
    finally:
        db.close()
    where = output or "stdout"
    typer.echo(f"wrote {n} trials of run {run_id} to {where}", err=True)


def import_log(
    file: Annotated[
        Path, typer.Argument(help="A file written by `harness export --format jsonl`.")
    ],
    store: Annotated[
        str | None, typer.Option("--store", help="SQLAlchemy URL (default $HARNESS_STORE).")
    ] = None,
) -> None:
    """Read a run log (JSON lines) into a store, every row as it was exported."""
    from harness.errors import ConfigError
    from harness.export.jsonl import import_jsonl
    from harness.store import Store, resolve_url

    if not file.is_file():
        _config_error(ValueError(f"{file}: no such file"))
    db = Store(resolve_url(store))
    try:
        run_id, n = import_jsonl(db, file)
    except ConfigError as exc:
        _config_error(exc)
        return
    finally:
        db.close()
    typer.echo(f"imported run {run_id}: {n} trials")
