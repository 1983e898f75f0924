"""Commands for looking at results: `harness html` (one report file) and `harness view`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

DEFAULT_PORT = 8765  # keep in step with harness.viewer.DEFAULT_PORT (not imported: startup time)


def register(app: typer.Typer) -> None:
    app.command("html")(html)
    app.command("view")(view)


def html(
    run_id: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional
        typer.Argument(help="Run id (default: the latest run)."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    store: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--store", help="SQLAlchemy URL of the store (default $HARNESS_STORE)."),
    ] = None,
    viewer_url: Annotated[
        str,
        typer.Option(
            "--viewer-url",
            help="Where `harness view` runs: the task table links to its trial pages.",
        ),
    ] = f"http://127.0.0.1:{DEFAULT_PORT}",
) -> None:
    """Write a run's report as one self-contained HTML file (plots inline, no network)."""
    from harness.report.html_page import write_html

    path = write_html(run_id, store, output, viewer_url=viewer_url)
    size = path.stat().st_size
    typer.echo(f"wrote {path} ({size / 1024:,.0f} KiB)", err=True)


def view(
    store: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--store", help="SQLAlchemy URL of the store (default $HARNESS_STORE)."),
    ] = None,
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1.")] = DEFAULT_PORT,
) -> None:
    """Browse runs, arms, tasks and trials (transcripts, grader evidence) on 127.0.0.1."""
    from harness.viewer.server import serve

    serve(store, port)
