"""Reports: store → report data (pure) → renderers (terminal, JSON, Markdown).

``load_report(run_id, store_url)`` is the report-data entry point; the shape of its dict is
documented in ``harness.report.data``.
"""

from harness.report.cli import load_report, print_report

__all__ = ["load_report", "print_report"]
