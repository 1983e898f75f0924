"""`harness runs`: the table (readable at 80 columns and when piped) and its JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from harness.ownership import shown_status

if TYPE_CHECKING:
    from harness.store.tables import Run


def resume_hint(run: Any, store_url: str | None) -> str | None:
    """The command that finishes a run (in the store at ``store_url``), when there is
    something to finish."""
    if shown_status(run) in ("interrupted", "failed", "stopped"):
        from harness.store.refs import resume_command

        return resume_command(run.id, store_url)
    return None


class RunListing(TypedDict):
    """One run as ``harness runs --json`` prints it."""

    id: str
    suite: str
    status: str
    """What the run is now (a 'running' run whose process is gone shows 'interrupted')."""
    recorded_status: str
    """The status as the store holds it."""
    started_at: str
    finished_at: str | None
    arms: list[str]
    trials_planned: int
    config_hash: str
    host: str
    pid: int
    resume: str | None
    """The command that finishes the run, when there is something to finish."""


def runs_json(rows: list[Run], store_url: str | None = None) -> list[RunListing]:
    return [
        {
            "id": r.id,
            "suite": r.suite_name,
            "status": shown_status(r),
            "recorded_status": r.status,
            "started_at": r.started_at.isoformat(),
            "finished_at": r.finished_at.isoformat() if r.finished_at else None,
            "arms": list(r.arms),
            "trials_planned": r.jobs_planned,
            "config_hash": r.config_hash,
            "host": r.host,
            "pid": r.pid,
            "resume": resume_hint(r, store_url),
        }
        for r in rows
    ]


def print_runs(rows: list[Any], store_url: str | None = None, console: Any = None) -> None:
    """The run id never wraps; arms wrap; the config hash goes first when space runs out."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("run id", no_wrap=True)
    table.add_column("suite", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("arms", overflow="fold", ratio=1)
    table.add_column("trials", justify="right", no_wrap=True)
    wide = console.width >= 110
    if wide:
        table.add_column("config", no_wrap=True)
    hints = []
    for r in rows:
        status = shown_status(r)
        cells = [
            r.id,
            r.suite_name,
            status,
            f"{r.started_at:%m-%d %H:%M}",
            ", ".join(r.arms),
            str(r.jobs_planned),
        ]
        if wide:
            cells.append(r.config_hash[:12])
        table.add_row(*cells)
        hint = resume_hint(r, store_url)
        if hint and status == "interrupted":
            hints.append(f"{r.id}: {_why(r)}; resume with `{hint}`")
    if not rows:
        console.print("no runs in this store")
        return
    console.print(table)
    for line in hints:
        console.print(line, soft_wrap=True)


def _why(run: Any) -> str:
    if run.status == "running":
        return f"its process {run.pid} is gone"
    return "interrupted"
