"""Commands for looking at results: `harness html` (one report file) and `harness view`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional
from urllib.parse import quote

import typer

from harness.commands.options import RUN_FORMS, LatestRunArg, StoreOpt

DEFAULT_PORT = 8765  # keep in step with harness.viewer.DEFAULT_PORT (not imported: startup time)


def register(app: typer.Typer) -> None:
    app.command("html")(html)
    app.command("view")(view)


def html(
    run_ref: LatestRunArg = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="FILE", help="The HTML file to write.")
    ] = Path("report.html"),
    store: StoreOpt = None,
    viewer_url: Annotated[
        str,
        typer.Option(
            "--viewer-url",
            metavar="URL",
            help="Where `harness view` runs: the task table links to its trial pages.",
        ),
    ] = f"http://127.0.0.1:{DEFAULT_PORT}",
) -> None:
    """Write a run's report as one self-contained HTML file (plots inline, no network)."""
    from harness.report.html_page import write_html
    from harness.store.refs import find_run, no_arm, open_for_reading

    db = open_for_reading(store)
    try:
        run_id = find_run(db, no_arm(run_ref, "html", "a report covers every arm of the run")).id
    finally:
        db.close()
    path = write_html(run_id, db.url, output, viewer_url=viewer_url)
    size = path.stat().st_size
    typer.echo(f"wrote {path} ({size / 1024:,.0f} KiB)", err=True)


def view(
    run_ref: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(
            metavar="RUN",
            help=f"Open at this run's page ({RUN_FORMS}); RUN:ARM at its arm's trials. "
            "Default: the list of runs.",
            show_default=False,
        ),
    ] = None,
    store: StoreOpt = None,
    port: Annotated[
        int, typer.Option("--port", "-p", metavar="PORT", help="Port on 127.0.0.1.")
    ] = DEFAULT_PORT,
    labeller: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="The name label forms start with (a browser remembers the last one used).",
        ),
    ] = "",
) -> None:
    """Browse runs, arms, tasks and trials (transcripts, grader evidence) on 127.0.0.1, and
    label trials pass or fail (stored beside them; verdicts are never changed)."""
    from harness.store.refs import find_run_and_arm, open_for_reading
    from harness.viewer.server import serve

    db = open_for_reading(store)
    try:
        page = "/"
        if run_ref is not None:
            run, arm = find_run_and_arm(db, run_ref)
            page = f"/run/{run.id}" + (f"/trials?arm={quote(arm)}" if arm else "")
    finally:
        db.close()
    serve(db.url, port, page, labeller)
