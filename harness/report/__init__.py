"""Reports: store → report data (pure) → renderers (``harness.report.render``: terminal, JSON,
Markdown, HTML, JUnit).

``load_report(run_id, store_url)`` is the report-data entry point; the shape of its dict is
``harness.report.records.Report``. Sections are built in ``sections``, ``reliability`` and
``usage`` from the statistics in ``harness.stats``; ``tasks`` holds the per-task table the HTML
report and the viewer show.
"""

from harness.report.cli import load_report, print_report

__all__ = ["load_report", "print_report"]
