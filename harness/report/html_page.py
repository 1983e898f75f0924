"""The HTML report's inputs, from one read of the run's table: the report data, the
per-task counts, the error kinds and the gate's verdict; then
``harness.report.render.html.render`` draws them.

    write_html(run_id, store_url, path)          # what `harness html` and `report --html` call
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.release.records import GateResult
from harness.release.source import suite_config
from harness.report import tasks as tk
from harness.report.records import Report
from harness.text import write_text
from harness.viewer import DEFAULT_VIEWER_URL

if TYPE_CHECKING:
    from harness.analysis.load import RunTable


def write_html(
    run_id: str | None,
    store_url: str | None,
    path: str | Path,
    *,
    viewer_url: str = DEFAULT_VIEWER_URL,
    estimand: str | None = None,
) -> Path:
    """Render the run's report to ``path`` (one file); returns the path written.
    ``estimand`` overrides the suite's ``report.estimand``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, build_html(run_id, store_url, viewer_url=viewer_url, estimand=estimand))
    return out


def build_html(
    run_id: str | None,
    store_url: str | None,
    *,
    viewer_url: str | None = DEFAULT_VIEWER_URL,
    data: Report | None = None,
    estimand: str | None = None,
) -> str:
    """Load the run's table once (what the report, the per-task table and the gate read),
    build the report data (unless given as ``data``) and the gate's verdict; render."""
    from harness.analysis.load import DECISIONS, TASK_TABLE, load_run_table
    from harness.report.cli import (
        add_judge,
        add_pairwise,
        load_report_table,
        report_of,
        report_run,
    )
    from harness.report.render.html import render
    from harness.store import Store, resolve_url

    store = Store(resolve_url(store_url))
    try:
        run = report_run(store, data["run"]["id"] if data is not None else run_id)
        gated = bool(suite_config(run).get("gate"))
        fields = TASK_TABLE | (DECISIONS if gated else set())
        if data is None:
            table = load_report_table(store, run, fields)
            data = report_of(run, table, estimand=estimand)
            add_judge(store, run, data)
            add_pairwise(store, run, data)
        else:  # the report data is given: read only what the page adds to it
            table = load_run_table(store, run.id, fields, with_notes=True)
        gate = gate_verdict(store, run, table) if gated else None
    finally:
        store.close()
    tasks = tk.task_counts(table.trials, data)
    return render(
        data, tasks, error_kinds=tk.error_kinds(table.notes), gate=gate, viewer_url=viewer_url
    )


def gate_verdict(store, run, table: RunTable) -> GateResult | None:
    """The release gate's verdict on the run's suite ``gate:`` policy, or None (also when
    the gate could not be applied: the page then leaves the section out)."""
    from harness.report.cli import declared_gate

    gate = declared_gate(store, run, table)
    return gate if isinstance(gate, dict) else None
