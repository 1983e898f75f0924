"""Glue between the CLI and the report: load a run from the store, build the data, render."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from harness.errors import ConfigError
from harness.release.records import GateResult
from harness.report.records import Report, RunSummary
from harness.store import Run, Store, resolve_url


def load_report(
    run_id: str | None,
    store_url: str | None,
    *,
    n_resamples: int | None = None,
    timings: dict[str, float] | None = None,
) -> Report:
    """THE report-data entry point: the report dict for ``run_id`` (default: latest run).

    The shape is ``harness.report.records.Report``; it is JSON-serialisable. Pass a
    ``timings`` dict to receive the seconds spent per phase.
    """
    from harness.analysis import run_roles, settings_of
    from harness.release.source import stored_config
    from harness.report.data import DEFAULT_RESAMPLES, build_report, scheduled_per_arm
    from harness.report.load import load_run_data

    t0 = time.perf_counter()
    store = Store(resolve_url(store_url))
    try:
        run = store.get_run(run_id) if run_id else store.latest_run()
        if run is None:
            what = f"no run with id '{run_id}'" if run_id else "no runs yet"
            raise ConfigError(store.url, "run", f"{what} in this store")
        config = stored_config(run)
        suite = config.get("suite", {})
        settings = settings_of(suite, run.trials_per_task)
        variants = bool(suite["variants"]) if "variants" in suite else None
        pairing = run_roles(suite, list(run.arms or [])).candidate is not None
        data = load_run_data(store, run.id, with_variants=variants, with_pairing=pairing)
        unresolved = store.unresolved_trials(run.id)
        agent_failed = store.agent_failures(run.id)
    finally:
        store.close()
    t1 = time.perf_counter()
    info = _run_summary(run)
    report = build_report(
        info,
        data,
        settings=settings,
        scheduled=scheduled_per_arm(
            config, run.trials_per_task, run.jobs_planned, len(run.arms or []) or 1
        ),
        n_resamples=n_resamples or DEFAULT_RESAMPLES,
        suite=suite,
    )
    from harness.report.causes import unresolved_causes

    causes = unresolved_causes(unresolved)
    failures = unresolved_causes(agent_failed)
    for name, arm in report["arms"].items():
        arm["unresolved_causes"] = causes.get(name, {"causes": [], "other": 0})
        arm["agent_failure_causes"] = failures.get(name, {"causes": [], "other": 0})
    t2 = time.perf_counter()
    report = clean(report)
    if timings is not None:
        timings.update(data.timings)
        timings.update(load_s=t1 - t0, statistics_s=t2 - t1, comparison_s=time.perf_counter() - t2)
    return report


def clean(value: Any) -> Any:
    """Make a value strict-JSON safe: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            f = float(value)
            return f if math.isfinite(f) else None
        if isinstance(value, np.ndarray):
            return clean(value.tolist())
    except ImportError:  # pragma: no cover
        pass
    return str(value)


def print_report(
    run_id: str | None,
    store_url: str | None,
    fmt: str = "terminal",
    quiet: bool = False,
    sections: Sequence[str] | None = (),
) -> None:
    """Print a run's report as 'terminal' (rich), 'json' or 'markdown'. The terminal report
    is the summary and the ``sections`` named (None: every section); the summary names the
    command for the rest. On a terminal, a spinner on stderr says what is being computed
    (large stores take seconds)."""
    from rich.console import Console

    err = Console(stderr=True)
    if quiet or not err.is_terminal:
        data, gate = _load(run_id, store_url, with_gate=fmt != "json")
    else:
        with err.status(f"loading and analysing run {run_id or '(latest)'} ..."):
            data, gate = _load(run_id, store_url, with_gate=fmt != "json")
    if fmt == "json":
        print(json.dumps(data, indent=2, allow_nan=False))
    elif fmt == "markdown":
        from harness.report.render.markdown import render_markdown

        print(render_markdown(data, gate=gate))
    else:
        from harness.report.render.terminal import render
        from harness.store.refs import store_flag

        more = f"harness report {data['run']['id']}{store_flag(store_url)}"
        render(data, sections=sections, gate=gate, more=more)


def _load(
    run_id: str | None, store_url: str | None, *, with_gate: bool
) -> tuple[Report, GateResult | str | None]:
    """The report data, and the gate's verdict when the suite declares a gate."""
    data = load_report(run_id, store_url)
    if not with_gate:
        return data, None
    store = Store(resolve_url(store_url))
    try:
        return data, declared_gate(store, data["run"]["id"])
    finally:
        store.close()


def declared_gate(store, run_id: str) -> GateResult | str | None:
    """The gate's result when the run's suite declares a ``gate:`` policy; None when it
    declares none; ``GATE_NOT_EVALUATED`` when the gate could not be applied.

    The gate reports its own errors (``harness gate``); here a failing gate only says so,
    so the report is never lost over it.
    """
    from harness.release.api import gate_run
    from harness.release.source import stored_config
    from harness.report.render.summary import GATE_NOT_EVALUATED

    run = store.get_run(run_id)
    suite = stored_config(run).get("suite", {}) if run is not None else {}
    if run is None or not isinstance(suite, dict) or not suite.get("gate"):
        return None
    try:
        result = gate_run(store, run.id)
    except Exception:  # noqa: BLE001 - optional section; never lose the report over it
        return GATE_NOT_EVALUATED
    return result if result.get("verdict") else GATE_NOT_EVALUATED


def _run_summary(run: Run) -> RunSummary:
    """The run's row as the report shows it (times as ISO strings)."""
    return {
        "id": run.id,
        "suite": run.suite_name,
        "status": run.status,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "harness_version": run.harness_version,
        "config_hash": run.config_hash,
        "sandbox": run.sandbox,
        "seed": run.seed,
        "trials_per_task": run.trials_per_task,
        "image_ids": run.image_ids,
        "arms": list(run.arms or []),
    }
