"""Renderers of the one report data structure (``harness.report.load_report``'s dict).

- ``terminal``: rich text for a terminal; ``markdown``: a pull-request comment;
  ``html``: one self-contained file (inline CSS, JS and SVG plots; no network);
  ``release``: compare, gate, plan and history output (terminal and Markdown);
  ``junit``: the gate's checks as JUnit XML for CI.

Renderers only format: every number they show is already in the data they are given.
"""
