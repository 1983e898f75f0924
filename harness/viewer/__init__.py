"""Looking at results: a self-contained HTML report and a local web viewer over the store.

- ``harness.viewer.html``: one report file (inline CSS, JS and SVG; no network) per run.
- ``harness.viewer.server``: ``harness view``, a loopback-only web UI over runs, arms, tasks
  and trials, with transcripts and grader evidence.

Both read the store through ``harness.store`` and the report data through
``harness.report.cli.load_report``; neither writes anything. matplotlib (the ``plots`` extra)
is imported lazily, only when a plot is drawn.
"""

DEFAULT_PORT = 8765
DEFAULT_VIEWER_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
