"""The `harness` command line. Options are thin: config models own defaults and validation.

Heavy modules (numpy, sqlmodel, docker) are imported inside commands so `--help` is instant.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_starting(signum, frame) -> None:  # pragma: no cover - timing
    """Until ``main`` installs its handlers: a signal during imports ends the process with
    the interrupted code and one line, not a KeyboardInterrupt traceback."""
    os.write(2, b"interrupted before the run was recorded: nothing to resume\n")
    os._exit(4)


for _sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_sig, _interrupted_while_starting)

import json  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Annotated, Optional, cast  # noqa: E402

import typer  # noqa: E402

if TYPE_CHECKING:
    from harness.runner import RunResult

from harness import exitcodes  # noqa: E402
from harness.commands.options import (  # noqa: E402
    REPORT_SECTIONS,
    RUN_FORMS,
    ConcurrencyOpt,
    LatestRunArg,
    LimitOpt,
    QuietOpt,
    SandboxOpt,
    StoreOpt,
    SubsetOpt,
    TaskGlobOpt,
    section_names,
)

ARM_LATER = "a report covers every arm of the run"


def _argument_help_without_types() -> None:
    """typer 0.2x prints each argument's Python type after its name in --help (``RUN <str>``);
    the metavar already says what to give, so arguments show the metavar alone, as options
    with a metavar do. Older typer shows no type: nothing to change there."""
    from typer.core import TyperArgument

    if callable(getattr(TyperArgument, "display_type_rich", None)):
        TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]


_argument_help_without_types()
app = typer.Typer(
    help="Run agents on tasks in sandboxes and report, with honest uncertainty, how good they are.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~0.4 s of imports
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"harness {__version__}")
        raise typer.Exit(exitcodes.OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run agents on tasks in sandboxes and report, with honest uncertainty, how good they are."""


def _fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


# long: the signature declares one typer option per ``harness run`` flag.
@app.command()
def run(
    suite: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(metavar="SUITE", help="The suite file.", show_default=False),
    ] = None,
    resume: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="RUN",
            help=f"Resume a run ({RUN_FORMS}): run only its trials without a final row.",
        ),
    ] = None,
    sandbox: SandboxOpt = None,
    executor: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="NAME", help="Where trials run: local (this process) or ray."),
    ] = None,
    ray_address: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="HOST:PORT", help="Ray cluster address for --executor ray."),
    ] = None,
    trials: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(metavar="N", help="Trials per task per arm (overrides the suite's)."),
    ] = None,
    concurrency: ConcurrencyOpt = None,
    seed: Annotated[Optional[int], typer.Option(metavar="N", help="Suite seed.")] = None,  # noqa: UP045
    store: StoreOpt = None,
    locked: Annotated[
        bool,
        typer.Option("--locked", help="Refuse to start if an image differs from the lock file."),
    ] = False,
    task: TaskGlobOpt = None,
    limit: LimitOpt = None,
    subset: SubsetOpt = None,
    arm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--arm", metavar="NAME", help="Only this arm (repeatable)."),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no retry messages.")
    ] = False,
    allow_internet: Annotated[
        bool,
        typer.Option(
            "--allow-internet",
            help="Let tasks that ask for open egress (internet: true) reach the internet "
            "(the suite's allow_internet, for this run).",
        ),
    ] = False,
) -> None:
    """Run a suite (or resume a run) and print its report."""
    from harness.errors import Interrupted

    if suite is None and resume is None:
        _fail("give a suite file, or --resume RUN", exitcodes.BAD_CONFIG)
    if quiet:
        import logging

        logging.getLogger("harness.retries").setLevel(logging.ERROR)
    overrides = {
        "sandbox": sandbox,
        "executor": executor,
        "ray_address": ray_address,
        "trials": trials,
        "concurrency": concurrency,
        "seed": seed,
        "task": task or None,
        "limit": limit,
        "subset": subset,
        "arm": arm or None,
        "allow_internet": allow_internet or None,
    }
    try:
        loaded = None
        if resume is None:  # config mistakes surface before the store and runner import
            from harness.resolve import load

            given_flags = {k: v for k, v in overrides.items() if v is not None}
            loaded = load(str(suite), given_flags, store_url=store)
        from harness.report.cli import print_report
        from harness.runner import start
    except KeyboardInterrupt:
        raise Interrupted(resume) from None
    result = start(
        str(suite) if suite else "",
        overrides,
        store,
        resume,
        progress_enabled=not quiet,
        locked=locked,
        loaded=loaded,
    )
    try:
        print_report(result.run_id, result.store_url, quiet=quiet)
    except KeyboardInterrupt:
        from harness.store.refs import store_flag

        shows = f"harness report {result.run_id}{store_flag(result.store_url)}"
        typer.echo(f"interrupted: run {result.run_id} is stored; `{shows}` shows it")
        raise typer.Exit(exitcodes.INTERRUPTED) from None
    o = result.outcome
    typer.echo(
        f"run id: {result.run_id}  ({o.finished} of {o.planned} trials finished this "
        f"session, {o.unresolved} unresolved)",
        err=True,
    )
    for cause, n in o.harness_errors.most_common(5):
        typer.echo(f"harness error ({n} trial(s)): {cause}", err=True)
    if result.pairwise is not None:
        typer.echo(_pairwise_line(result), err=True)
    if o.interrupted:
        typer.echo(f"interrupted: resume with `{result.resume_command}`", err=True)
    elif o.stopped is not None:
        typer.echo(
            f"stopped: {o.stopped}; resume with `{result.resume_command}` once the endpoint works",
            err=True,
        )
    raise typer.Exit(result.exit_code)


def _pairwise_line(result: RunResult) -> str:
    """What the suite's pairwise judge did at the end of the run, in one line."""
    from harness.store.refs import store_flag

    p = result.pairwise
    assert p is not None
    again = f"harness pairwise {result.run_id}{store_flag(result.store_url)}"
    if p.error:
        return f"pairwise judge failed: {p.error}; continue with `{again}`"
    if p.skipped:
        return f"pairwise judge skipped: {p.skipped}"
    return f"pairwise judge: {p.new_calls} new judgement(s), {p.reused} reused (`{again}`)"


@app.command()
def report(
    run_ref: LatestRunArg = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Machine-readable JSON on stdout.")
    ] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown on stdout.")] = False,
    html: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--html", metavar="FILE", help="Also write a self-contained HTML report to FILE."
        ),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Every section after the summary (terminal).")
    ] = False,
    section: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--section",
            metavar="NAME",
            help=f"Also print these sections after the summary ({', '.join(REPORT_SECTIONS)}); "
            "repeat it or separate names with commas.",
        ),
    ] = None,
    estimand: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--estimand",
            metavar="NAME",
            help="What the success intervals are for: superpopulation (tasks as a sample of "
            "tasks like them) or fixed-suite (this suite's tasks held fixed: trial noise only). "
            "Default: the suite's report.estimand.",
        ),
    ] = None,
    store: StoreOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Print a run's report: first a one-screen summary (per arm the success rate with n
    and interval, the primary comparison, the gate's verdict, unresolved trials), then the
    sections asked for."""
    from harness.report.cli import print_report
    from harness.store.refs import find_run, no_arm, open_for_reading

    if estimand is not None and estimand not in ("superpopulation", "fixed-suite"):
        raise typer.BadParameter(
            f"'{estimand}' is not an estimand: superpopulation or fixed-suite",
            param_hint="--estimand",
        )
    db = open_for_reading(store)
    try:
        run_id = find_run(db, no_arm(run_ref, "report", ARM_LATER)).id
    finally:
        db.close()
    print_report(
        run_id,
        db.url,
        fmt="json" if as_json else "markdown" if markdown else "terminal",
        quiet=quiet,
        sections=None if full else section_names(section or []),
        estimand=estimand,
    )
    if html:
        from harness.report.html_page import write_html

        write_html(run_id, db.url, html, estimand=estimand)
        typer.echo(f"wrote {html}", err=True)


@app.command()
def runs(
    suite: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="NAME", help="Only runs of this suite."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    limit: Annotated[int, typer.Option(metavar="N", help="Most recent runs to show.")] = 50,
    store: StoreOpt = None,
) -> None:
    """List runs in the store, newest first. A run whose process is gone shows as
    interrupted, with the command that resumes it."""
    from harness.runs_table import print_runs, runs_json
    from harness.store.refs import open_for_reading

    db = open_for_reading(store)
    try:
        rows = db.list_runs(suite, limit=limit)
    finally:
        db.close()
    if as_json:
        typer.echo(json.dumps(runs_json(rows, db.url), indent=2))
    else:
        print_runs(rows, db.url)


# Feature areas register their commands on `app` from their own modules (each imports only
# typer at module level, so `harness --help` stays fast).
from harness.commands import register_all  # noqa: E402

register_all(app)


def main() -> None:
    """Entry point: turns known errors into one line and an exit code, never a traceback."""
    from harness.cli_errors import ExitLike, ShowsItself, aborts, click_exceptions, exits
    from harness.errors import ConfigError, EnvironmentBuildError, HarnessError, Interrupted
    from harness.pipes import guard_stdout
    from harness.text import safe_stdio

    _install_signal_handlers()
    safe_stdio()  # agent text that is not valid Unicode prints as escapes, never raises
    guard_stdout()
    try:
        code = app(standalone_mode=False)
    except Interrupted as exc:
        _exit_interrupted(str(exc))
    except KeyboardInterrupt:  # outside a run's own handling: nothing was recorded
        _exit_interrupted(str(Interrupted(None)))
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exitcodes.BAD_CONFIG)
    except EnvironmentBuildError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exitcodes.ENVIRONMENT)
    except HarnessError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exitcodes.ENVIRONMENT)
    except exits() as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Exit(130)
            _exit_interrupted(str(Interrupted(None)))
        sys.exit(cast(ExitLike, exc).exit_code)
    except aborts():
        sys.exit(exitcodes.INTERRUPTED)
    except click_exceptions() as exc:  # usage errors: the library's own one-line message
        cast(ShowsItself, exc).show()
        sys.exit(exitcodes.BAD_CONFIG)
    except Exception as exc:  # real bugs
        _internal_error(exc)
    if code == 130:  # click's code for Ctrl-C while it parses (a run converts its own)
        _exit_interrupted(str(Interrupted(None)))
    if code == exitcodes.INTERRUPTED:  # a run stopped by a signal, its cleanup done:
        from harness.hard_stop import exit_now  # skip the interpreter's teardown

        exit_now(code)
    sys.exit(code if isinstance(code, int) else exitcodes.OK)


def _exit_interrupted(message: str) -> None:
    """Exit 4 with one line; a second signal while exiting is ignored, not a traceback."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    typer.echo(message, err=True)
    # Not sys.exit: CPython re-kills itself with SIGINT at exit (status -2, not 4) when it saw
    # a KeyboardInterrupt go unhandled in code it ran for an import. Cleanup has run already.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exitcodes.INTERRUPTED)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _install_signal_handlers() -> None:
    """SIGINT and SIGTERM both become KeyboardInterrupt, so every moment of a command ends
    the same way: exit 4, and the resume hint when a run was recorded. While trials run, the
    orchestrator takes the signals over (finish in-flight trials first)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_interrupt)


def _internal_error(exc: BaseException) -> None:
    import tempfile
    import traceback

    path = Path(tempfile.gettempdir()) / "harness-last-error.log"
    path.write_text("".join(traceback.format_exception(exc)), errors="backslashreplace")
    typer.echo(
        f"internal error: {type(exc).__name__}: {exc} (traceback in {path}; "
        "this is a bug in harness, please report it)",
        err=True,
    )
    sys.exit(exitcodes.INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    main()

__all__ = ["app", "json", "main"]
