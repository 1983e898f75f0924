"""Glue between the CLI and the report: load a run from the store, render it."""

from __future__ import annotations

import json

from harness.errors import ConfigError
from harness.report.data import run_report
from harness.store import Store, resolve_url

ROW_FIELDS = [
    "arm",
    "task_id",
    "cluster",
    "task_class",
    "status",
    "passed",
    "variant",
    "trial_index",
]


def load_report(run_id: str | None, store_url: str | None) -> dict:
    store = Store(resolve_url(store_url))
    run = store.get_run(run_id) if run_id else store.latest_run()
    if run is None:
        what = f"no run with id '{run_id}'" if run_id else "no runs yet"
        raise ConfigError(store.url, "run", f"{what} in this store")
    cols = store.trial_columns(run.id, ROW_FIELDS)
    rows = [dict(zip(ROW_FIELDS, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
    suite = run.config.get("suite", {})
    return run_report(
        run,
        rows,
        denominator=suite.get("denominator", "failure"),
        confidence=suite.get("report", {}).get("confidence", 0.95),
    )


def print_report(run_id: str | None, store_url: str | None, fmt: str = "terminal") -> None:
    data = load_report(run_id, store_url)
    if fmt == "json":
        print(json.dumps(data, indent=2, default=str))
    elif fmt == "markdown":
        from harness.report.markdown import render_markdown

        print(render_markdown(data))
    else:
        from harness.report.terminal import render

        render(data)
