"""The HTML report's inputs, read from the store: the report data, the per-task rows, the
error kinds and the gate's verdict; then ``harness.report.render.html.render`` draws them.

    write_html(run_id, store_url, path)          # what `harness html` and `report --html` call
"""

from __future__ import annotations

from pathlib import Path

from harness.release.records import GateResult
from harness.report import tasks as tk
from harness.report.records import Report
from harness.text import write_text
from harness.viewer import DEFAULT_VIEWER_URL


def write_html(
    run_id: str | None,
    store_url: str | None,
    path: str | Path,
    *,
    viewer_url: str = DEFAULT_VIEWER_URL,
) -> Path:
    """Render the run's report to ``path`` (one file); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, build_html(run_id, store_url, viewer_url=viewer_url))
    return out


def build_html(
    run_id: str | None,
    store_url: str | None,
    *,
    viewer_url: str | None = DEFAULT_VIEWER_URL,
    data: Report | None = None,
) -> str:
    """Load the report data (unless given as ``data``), the per-task table and the gate's
    verdict; render the page."""
    from harness.report.cli import load_report
    from harness.report.render.html import render
    from harness.store import Store, resolve_url

    url = resolve_url(store_url)
    data = data if data is not None else load_report(run_id, url)
    store = Store(url)
    try:
        rr = tk.load_rows(store, data)
        kinds = tk.error_kinds(store, rr.run_id)
        gate = gate_verdict(store, data)
    finally:
        store.close()
    return render(data, rr, error_kinds=kinds, gate=gate, viewer_url=viewer_url)


def gate_verdict(store, data: Report) -> GateResult | None:
    """The release gate's verdict when the suite declares a ``gate:`` policy, else None."""
    from harness.report.cli import declared_gate

    gate = declared_gate(store, data["run"]["id"])
    return gate if isinstance(gate, dict) else None
