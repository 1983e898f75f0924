"""Commands that bring other benchmarks in and send results out: `harness import tau-bench`,
`harness import harbor`, `harness export`, `harness import-log`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness import exitcodes
from harness.commands.options import RUN_FORMS, StoreOpt

OutDirOpt = Annotated[
    Path, typer.Option(metavar="DIR", help="Where environments/ and tasks/ are written.")
]

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
    path: Annotated[
        Path,
        typer.Argument(
            metavar="DIR", help="A tau-bench checkout (the repository root).", show_default=False
        ),
    ],
    domain: Annotated[str, typer.Option(metavar="NAME", help="retail or airline.")] = "retail",
    split: Annotated[
        str, typer.Option(metavar="NAME", help="test, train or dev (airline has test).")
    ] = "test",
    out: OutDirOpt = Path("."),
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
    path: Annotated[
        Path,
        typer.Argument(
            metavar="DIR", help="A Harbor task directory, or a folder of them.", show_default=False
        ),
    ],
    out: OutDirOpt = Path("."),
) -> None:
    """Write environments/harbor-NAME and tasks/harbor/{tasks,suite}.yaml; print what was
    imported and, one line each, what was refused and why."""
    from harness.errors import ConfigError
    from harness.importers.harbor import import_harbor
    from harness.importers.harbor_judge import BASE_URL_VAR

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
    allow = ""
    if done.open_egress:
        typer.echo(
            f"{len(done.open_egress)} task(s) have Harbor's public network (the internet):\n"
            "the suite runs them only with --allow-internet"
        )
        allow = " --allow-internet"
    for var in sorted(set(done.judged.values())):
        n = sum(v == var for v in done.judged.values())
        typer.echo(
            f"{n} task(s) are graded by a model judge (the harness's judge grader): set {var}, "
            f"and {BASE_URL_VAR} for another endpoint"
        )
    if done.suite is not None:
        typer.echo(f"run them: harness run {done.suite}{allow}")


def export(
    run_ref: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            help=f"The run ({RUN_FORMS}); RUN:ARM exports one arm (inspect only).",
            show_default=False,
        ),
    ],
    format: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="jsonl or inspect.")
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="jsonl: the file to write (default: stdout). inspect: the log directory "
            "to write into (open it with `inspect view --log-dir PATH`).",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Write a run as JSON lines (every row, attempt and event; `harness import-log` reads
    it back) or as Inspect AI eval logs, one per arm, that `inspect view` lists."""
    from harness.errors import ConfigError
    from harness.store.refs import find_run_and_arm, open_for_reading

    if format not in ("jsonl", "inspect"):
        _config_error(ValueError(f"--format: unknown format '{format}' (jsonl, inspect)"))
    db = open_for_reading(store)
    try:
        run, arm = find_run_and_arm(db, run_ref)
        if format == "jsonl":
            if arm is not None:
                raise ConfigError(
                    run_ref,
                    "",
                    "a jsonl export holds the whole run (import-log reads it back losslessly); "
                    "name the run without :ARM",
                )
            _export_jsonl(db, run.id, output)
        else:
            _export_inspect(db, run.id, output, [arm] if arm else None)
    except ConfigError as exc:
        _config_error(exc)
    finally:
        db.close()


def _export_jsonl(db, run_id: str, output: Path | None) -> None:
    import sys

    from harness.export.jsonl import write_jsonl

    if output is None:
        n = write_jsonl(db, run_id, sys.stdout)
    else:
        with output.open("w") as fh:
            n = write_jsonl(db, run_id, fh)
    typer.echo(f"wrote {n} trials of run {run_id} to {output or 'stdout'}", err=True)


def _export_inspect(db, run_id: str, log_dir: Path | None, arms: list[str] | None) -> None:
    from harness.errors import ConfigError
    from harness.export.inspect import write_inspect

    if log_dir is None or log_dir.suffix in (".json", ".eval") or log_dir.is_file():
        given = f" ('{log_dir}' names a file)" if log_dir is not None else ""
        raise ConfigError(
            "command line",
            "--output",
            f"--format inspect writes a log directory{given}: give one with -o DIR, then "
            "`inspect view --log-dir DIR`",
        )
    written = write_inspect(db, run_id, log_dir, arms)
    files = "".join(f"\n  {w.arm} ({w.trials} trials):\n    {w.path.name}" for w in written)
    typer.echo(
        f"wrote {len(written)} Inspect log(s) of run {run_id} to {log_dir}:{files}\n"
        f"open them with: inspect view --log-dir {log_dir}",
        err=True,
    )


def import_log(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="A file written by `harness export --format jsonl`.",
            show_default=False,
        ),
    ],
    store: StoreOpt = None,
) -> None:
    """Read a run log (JSON lines) into a store, every row as it was exported."""
    from harness.errors import ConfigError
    from harness.export.jsonl import import_jsonl
    from harness.store import Store, resolve_url

    if not file.is_file():
        _config_error(ValueError(f"{file}: no such file"))
    db = Store(resolve_url(store))
    try:
        got = import_jsonl(db, file)
    except ConfigError as exc:
        _config_error(exc)
        return
    finally:
        db.close()
    typer.echo(f"imported run {got.run_id}: {got.trials} trials")
    for other, n in sorted(got.waiting.items()):
        typer.echo(
            f"{n} pairwise judgement(s) across runs wait for run {other} (not in this store): "
            "importing its log links them"
        )
