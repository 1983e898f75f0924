"""Glue between the CLI and the report: load a run from the store, build the data, render."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError
from harness.release.records import GateResult
from harness.report.records import Report, RunSummary
from harness.store import Run, Store, resolve_url

if TYPE_CHECKING:
    from harness.analysis.load import RunTable


def load_report(
    run_id: str | None,
    store_url: str | None,
    *,
    n_resamples: int | None = None,
    timings: dict[str, float] | None = None,
    estimand: str | None = None,
) -> Report:
    """THE report-data entry point: the report dict for ``run_id`` (default: latest run).

    The shape is ``harness.report.records.Report``; it is JSON-serialisable. Pass a
    ``timings`` dict to receive the seconds spent per phase; ``estimand`` ('superpopulation'
    or 'fixed-suite') overrides the suite's ``report.estimand``.
    """
    t0 = time.perf_counter()
    store = Store(resolve_url(store_url))
    try:
        run = report_run(store, run_id)
        table = load_report_table(store, run)
        if timings is not None:
            timings["load_s"] = time.perf_counter() - t0
        report = report_of(run, table, n_resamples=n_resamples, timings=timings, estimand=estimand)
        add_judge(store, run, report)
        add_pairwise(store, run, report)
    finally:
        store.close()
    return report


def report_run(store: Store, run_id: str | None) -> Run:
    """The run ``run_id`` names (default: the latest), or a ConfigError saying there is none."""
    run = store.get_run(run_id) if run_id else store.latest_run()
    if run is None:
        what = f"no run with id '{run_id}'" if run_id else "no runs yet"
        raise ConfigError(store.url, "run", f"{what} in this store")
    return run


def load_report_table(store: Store, run: Run, fields: Iterable[str] = ()) -> RunTable:
    """The run's table with what the report reads (and ``fields`` besides): the trial ids
    and the pairing seeds only when a view needs them."""
    from harness.analysis import run_roles
    from harness.analysis.load import REPORT, load_run_table
    from harness.release.source import stored_config

    suite = stored_config(run).get("suite", {})
    variants = bool(suite["variants"]) if "variants" in suite else None
    pairing = run_roles(suite, list(run.arms or [])).candidate is not None
    wanted = REPORT | set(fields) | ({"seed"} if pairing else set())
    return load_run_table(store, run.id, wanted, with_variants=variants, with_notes=True)


def report_of(
    run: Run,
    table: RunTable,
    *,
    n_resamples: int | None = None,
    timings: dict[str, float] | None = None,
    estimand: str | None = None,
) -> Report:
    """The report data of a loaded run (pure: no store); ``estimand`` overrides the suite's."""
    from harness.analysis import settings_of
    from harness.release.evidence import flagged_tasks
    from harness.release.source import stored_config
    from harness.report.causes import agent_failure_rows, unresolved_causes, unresolved_rows
    from harness.report.data import DEFAULT_RESAMPLES, build_report, scheduled_per_arm
    from harness.report.provenance import provenance, provenance_warnings

    t1 = time.perf_counter()
    config = stored_config(run)
    suite = config.get("suite", {})
    report = build_report(
        _run_summary(run),
        table,
        settings=settings_of(
            suite, run.trials_per_task, config.get("tasks"), config.get("subset")
        ).for_estimand(estimand),
        scheduled=scheduled_per_arm(
            config, run.trials_per_task, run.jobs_planned, len(run.arms or []) or 1
        ),
        n_resamples=n_resamples or DEFAULT_RESAMPLES,
        suite=suite,
        must_never_tasks=flagged_tasks(config),
    )
    causes = unresolved_causes(unresolved_rows(table.notes))
    failures = unresolved_causes(agent_failure_rows(table.notes))
    for name, arm in report["arms"].items():
        arm["unresolved_causes"] = causes.get(name, {"causes": [], "other": 0})
        arm["agent_failure_causes"] = failures.get(name, {"causes": [], "other": 0})
    report["provenance"] = provenance(config, run.sandbox, table.trials)
    report["warnings"] = report["warnings"] + provenance_warnings(report["provenance"])
    t2 = time.perf_counter()
    report = clean(report)
    if timings is not None:
        timings.update(table.timings)
        timings.update(statistics_s=t2 - t1, comparison_s=time.perf_counter() - t2)
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
    estimand: str | None = None,
) -> None:
    """Print a run's report as 'terminal' (rich), 'json' or 'markdown'. The terminal report
    is the summary and the ``sections`` named (None: every section); the summary names the
    command for the rest. On a terminal, a spinner on stderr says what is being computed
    (large stores take seconds)."""
    from rich.console import Console

    err = Console(stderr=True)
    if quiet or not err.is_terminal:
        data, gate = _load(run_id, store_url, with_gate=fmt != "json", estimand=estimand)
    else:
        with err.status(f"loading and analysing run {run_id or '(latest)'} ..."):
            data, gate = _load(run_id, store_url, with_gate=fmt != "json", estimand=estimand)
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
    run_id: str | None, store_url: str | None, *, with_gate: bool, estimand: str | None = None
) -> tuple[Report, GateResult | str | None]:
    """The report data, and the gate's verdict when the suite declares a gate: one read of
    the run's table for both."""
    from harness.analysis.load import DECISIONS
    from harness.release.source import stored_config, suite_config
    from harness.report.steps import steps_section

    store = Store(resolve_url(store_url))
    try:
        run = report_run(store, run_id)
        gated = with_gate and bool(suite_config(run).get("gate"))
        table = load_report_table(store, run, DECISIONS if gated else ())
        gate = declared_gate(store, run, table) if gated else None
        steps = steps_section(store, run, dict(stored_config(run)))
        report = report_of(run, table, estimand=estimand)
        add_judge(store, run, report)
        add_pairwise(store, run, report)
    finally:
        store.close()
    if steps is not None:
        report["steps"] = steps
    return report, gate


def add_judge(store: Store, run: Run, report: Report) -> None:
    """The report's judge section, for a run with judged trials (at the report's confidence:
    the numbers ``harness judge-agreement --confidence C --json`` prints)."""
    from harness.analysis.judging import run_judge_summary
    from harness.release.source import stored_config

    tasks = stored_config(run).get("tasks") or {}
    graders = [g for t in tasks.values() for g in t.get("graders") or []]
    if not any(g.get("type") == "judge" for g in graders):
        return  # no trial row is read for a run no judge graded
    summary = run_judge_summary(store, run, report["settings"]["confidence"])
    if summary["judged_trials"]:
        report["judge"] = clean(summary)


def add_pairwise(store: Store, run: Run, report: Report) -> None:
    """The report's pairwise section, for a run with stored pairwise judgements (at the
    report's confidence: what ``harness pairwise RUN --json`` prints of them)."""
    from harness.pairwise.summary import run_pairwise_summary

    summary = run_pairwise_summary(store, run, report["settings"]["confidence"])
    if summary is not None:
        report["pairwise"] = clean(summary)


def declared_gate(store: Store, run: Run, table: RunTable) -> GateResult | str | None:
    """The gate's result when the run's suite declares a ``gate:`` policy; None when it
    declares none; ``GATE_NOT_EVALUATED`` when the gate could not be applied.

    The gate reports its own errors (``harness gate``); here a failing gate only says so,
    so the report is never lost over it.
    """
    from harness.release.api import gate_policy, gate_trials
    from harness.release.source import suite_config
    from harness.report.render.summary import GATE_NOT_EVALUATED

    if not suite_config(run).get("gate"):
        return None
    try:
        result = gate_trials(store, run, table.trials, gate_policy(run))
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
