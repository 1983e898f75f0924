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
    """A table whose words stay whole (run ids, suite and arm names never split, one arm per
    line); the config hash only on wide terminals; when even the longest names cannot stay
    whole at this width, one block of lines per run instead."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from harness.report.render.narrow import keep_words_whole

    console = console or Console()
    if not rows:
        console.print("no runs in this store")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ("run id", "suite", "status", "started", "arms", "trials"):
        table.add_column(header, justify="right" if header == "trials" else "left")
    wide = console.width >= 110
    if wide:
        table.add_column("config", no_wrap=True)
    hints = []
    lines = []
    for r in rows:
        status = shown_status(r)
        cells = [r.id, r.suite_name, status, f"{r.started_at:%m-%d %H:%M}", "\n".join(r.arms)]
        cells.append(str(r.jobs_planned))
        lines.append(
            f"{r.id}  {status}  {r.started_at:%m-%d %H:%M}  {r.jobs_planned} trials\n"
            f"  suite {r.suite_name}\n  arms {', '.join(r.arms)}"
        )
        table.add_row(*cells, *([r.config_hash[:12]] if wide else []))
        hint = resume_hint(r, store_url)
        if hint and status == "interrupted":
            hints.append(f"{r.id}: {_why(r)}; resume with `{hint}`")
    if keep_words_whole(table, console):
        console.print(table)
    else:
        for block in lines:
            console.print(block, markup=False, highlight=False)
    for line in hints:
        console.print(line, soft_wrap=True)


def _why(run: Any) -> str:
    if run.status == "running":
        return f"its process {run.pid} is gone"
    return "interrupted"
