"""The HTML report's plotted sections, arranged for the templates from the report data.

Each function returns the context of one section (or None when its data are absent): rows
for a table, an SVG plot (``plots``; matplotlib is the ``plots`` extra, and without it the
plot becomes a one-line note) and a note naming the method. No statistics are computed here
beyond arranging what the report data and the gate hold (the Pareto front and hull of the
cost plot come from ``harness.stats``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from harness.release.records import ClassScreen, Comparison, NoiseFloor
from harness.report import tasks as tk
from harness.report.records import (
    ArmReport,
    ClassDelta,
    ErrorKind,
    PairedDelta,
    Report,
    UnresolvedCauses,
    UsageSection,
)
from harness.report.render.contexts import (
    ArmCause,
    CalibrationArm,
    CalibrationSection,
    CostPoint,
    CostRow,
    CostSection,
    ForestRow,
    ForestSection,
    InfraRow,
    InfraSection,
    PasskCurve,
    PasskRow,
    PasskSection,
    PlotFigure,
    TaskCell,
    TaskTable,
    TaskTableRow,
)
from harness.report.render.numbers import num, pct
from harness.report.render.plots import arm_colors

__all__ = ["DEFAULT_COLOR", "STATUS_COLORS", "arm_colors", "num", "pct"]

DEFAULT_COLOR = "#495057"
STATUS_COLORS = {
    "passed": "#2b8a3e",
    "failed": "#e03131",
    "infra_error": "#f08c00",
    "grader_error": "#ae3ec9",
    "harness_error": "#495057",
}


def plot(name: str, draw: Callable[[], str], caption: str) -> PlotFigure:
    """Draw one plot; a missing matplotlib becomes a note, not a crash."""
    from markupsafe import Markup

    from harness.report.render.plots import MatplotlibMissing

    try:
        return {"name": name, "svg": Markup(draw()), "caption": caption, "missing": None}
    except MatplotlibMissing as exc:
        return {"missing": str(exc)}


def _arm(data: Report, arm: str) -> ArmReport:
    return (data.get("arms") or {}).get(arm) or {}


def usage_of(data: Report, arm: str) -> UsageSection | None:
    return _arm(data, arm).get("usage")


def _unknown_tokens(usage: UsageSection | None) -> int:
    """Trials whose model endpoint reported no usage (0 when the arm has no usage data)."""
    tokens = usage.get("tokens") if usage else None
    return (tokens.get("unknown_trials") if tokens else None) or 0


def _causes(arm: ArmReport, key: str = "unresolved_causes") -> UnresolvedCauses:
    """The arm's top causes of unresolved trials, or of failures the agent caused."""
    found = (
        arm.get("agent_failure_causes")
        if key == "agent_failure_causes"
        else arm.get("unresolved_causes")
    )
    return found or {"causes": [], "other": 0}


def _delta_row(
    label: str,
    r: ClassScreen | Comparison | PairedDelta | ClassDelta,
    n: int | None,
    overall: bool = False,
) -> ForestRow:
    return {"label": label, "estimate": r.get("estimate"), "lo": r.get("lo"), "hi": r.get("hi"),
            "n": n, "overall": overall, "warning": r.get("warning")}  # fmt: skip


def forest(data: Report, tasks: tk.TaskCounts) -> ForestSection | None:
    """Per-class paired deltas of the report data (``class_deltas``: the class screens of the
    primary comparison ``compare`` and ``gate`` show), with its A/A noise floor."""
    from harness.report.render import plots

    deltas = data.get("class_deltas") or None
    if not deltas:
        return None
    base, cand = deltas["baseline"], deltas["candidate"]
    rows: list[ForestRow] = [_delta_row(c["class"], c, c["n"]) for c in deltas["by_class"]]
    rows.insert(0, _delta_row("overall", deltas["overall"], deltas["overall"]["n"], True))
    method = deltas["method"]
    noise: tuple[float | None, float | None] | None = None
    noise_row: NoiseFloor | None = deltas.get("noise_floor")
    if noise_row:
        noise = (noise_row.get("lo"), noise_row.get("hi"))
        method += f"; A/A noise floor: {noise_row.get('arm')} − {base}, same method"
        if noise_row.get("degenerate"):
            method += f"; {noise_row['degenerate_reason']}"
    svg = plot(
        "forest",
        lambda: plots.forest(rows, noise=noise, xlabel=f"{cand} − {base} (percentage points)"),
        f"Paired per-class deltas ({cand} − {base}) with intervals; "
        + (
            "grey band: the A/A noise floor (the same comparison between two copies of the "
            "baseline): deltas inside it are indistinguishable from noise."
            if noise
            else "no A/A arm in this run, so no noise floor."
        ),
    )
    return {"plot": svg, "rows": rows, "noise": noise, "noise_row": noise_row, "note": method}


def passk(data: Report, tasks: tk.TaskCounts, colors: dict[str, str]) -> PasskSection | None:
    """Observed pass^k and pass@k per arm with the report's beta-binomial predictions."""
    from harness.report.render import plots

    trials = int((data.get("run") or {}).get("trials_per_task") or 1)
    curves: dict[str, PasskCurve] = {}
    for arm in tasks.arms:
        a = _arm(data, arm)
        c: PasskCurve = {
            "pass_hat_k": a.get("pass_hat_k") or [],
            "pass_at_k": a.get("pass_at_k") or [],
            "pred_hat": (a.get("pass_hat_k_predicted") or {}).get("points") or [],
            "pred_at": (a.get("pass_at_k_predicted") or {}).get("points") or [],
        }
        if c["pass_hat_k"] or c["pred_hat"]:
            curves[arm] = c
    if not curves:
        return None
    svg = plot(
        "passk",
        lambda: plots.passk(curves, colors, trials),
        "Solid: unbiased pass^k / pass@k over the trials run (with intervals where reported). "
        "Dashed with band: beta-binomial prediction for every k, beyond the trials run.",
    )
    predicted = [a for a, c in curves.items() if c["pred_hat"] or c["pred_at"]]
    rows: list[PasskRow] = [
        {
            "arm": arm,
            "by_k": [{p["k"]: p for p in c["pass_hat_k"]}.get(k) for k in range(1, trials + 1)],
        }
        for arm, c in curves.items()
    ]
    note = (
        f"pass^k and pass@k predictions for {', '.join(predicted)} as reported (beta-binomial)."
        if predicted
        else ""
    )
    return {"plot": svg, "ks": list(range(1, trials + 1)), "rows": rows, "note": note}


def cost(data: Report, tasks: tk.TaskCounts, colors: dict[str, str]) -> CostSection | None:
    """Cost per trial against success per arm (``usage.cost.per_trial_usd``), with the Pareto
    front and the upper convex hull."""
    from harness.report.render import plots
    from harness.stats import pareto_front, upper_convex_hull

    points: list[CostPoint] = []
    rows: list[CostRow] = []
    sources: set[str] = set()
    for arm in tasks.arms:
        a = _arm(data, arm)
        usage = a.get("usage")
        cst = (usage.get("cost") if usage else None) or None
        lat = (usage.get("latency") if usage else None) or {}
        per_trial = (cst.get("per_trial_usd") if cst else None) or {}
        cost_estimate = per_trial.get("estimate")
        if cost_estimate is not None:
            sources.add(str(per_trial.get("method", "as reported")))
        success = a.get("success") or {}
        rows.append(
            {
                "arm": arm,
                "per_trial": per_trial,
                "per_success": ((cst.get("per_success_usd") if cst else None) or {}).get(
                    "estimate"
                ),
                "known": cst.get("known_trials") if cst else None,
                "trials": cst.get("trials") if cst else None,
                "tokens": (usage.get("tokens") if usage else None) or None,
                "mean_latency": lat.get("mean_s"),
                "p95": lat.get("p95_s"),
                "success": success,
            }
        )
        success_estimate = success.get("estimate")
        if cost_estimate is not None and success_estimate is not None:
            points.append({"arm": arm, "cost": cost_estimate, "estimate": success_estimate,
                           "lo": success.get("lo"), "hi": success.get("hi")})  # fmt: skip
    unknown_tokens = any(_unknown_tokens(usage_of(data, arm)) for arm in tasks.arms)
    if (not points or all(p["cost"] == 0 for p in points)) and not unknown_tokens:
        return None
    if not points:  # the table still says which arms' usage is unknown
        return {"plot": {"missing": "no arm has a known cost"}, "rows": rows, "note": None}
    acc = [p["estimate"] for p in points]
    costs = [p["cost"] for p in points]
    front = [int(i) for i in pareto_front(acc, costs)]
    hull = [int(i) for i in upper_convex_hull(acc, costs)]
    svg = plot(
        "cost",
        lambda: plots.cost_accuracy(points, colors, front, hull),
        "Each arm at its cost per trial and success rate (with interval). Green: Pareto "
        "front (no arm is both cheaper and better). Dashed: upper convex hull, what random "
        "mixtures of arms can reach at each budget.",
    )
    note = (
        f"On the Pareto front: {', '.join(points[i]['arm'] for i in front)}. Cost per trial: "
        f"{'; '.join(sorted(sources))}. Trials with an unknown cost (unknown price or no "
        "usage reported) are left out of it, never counted as free; tokens per trial are means "
        "over the trials whose model endpoint reported usage (n shown)."
    )
    return {"plot": svg, "rows": rows, "note": note}


def calibration(
    data: Report, tasks: tk.TaskCounts, colors: dict[str, str]
) -> CalibrationSection | None:
    """Reliability diagram and ECE per arm, from ``reliability.calibration``."""
    from harness.report.render import plots

    arms: dict[str, CalibrationArm] = {}
    for arm in tasks.arms:
        rel = _arm(data, arm).get("reliability")
        cal = rel["calibration"] if rel else None
        if cal:
            arms[arm] = {"n": cal["n"], "ece": cal["ece"], "bins": cal["diagram"], "record": cal}
    if not arms:
        return None
    svg = plot(
        "calibration",
        lambda: plots.calibration(arms, colors),
        "Reliability diagram: mean stated confidence against observed success in 10 "
        "equal-width bins; marker area proportional to the trials in the bin.",
    )
    methods = sorted({str(a["record"]["method"]) for a in arms.values()})
    return {
        "plot": svg,
        "arms": arms,
        "note": "ECE: expected calibration error, " + "; ".join(methods),
    }


def infra(data: Report, tasks: tk.TaskCounts, error_kinds: list[ErrorKind]) -> InfraSection | None:
    """Trials by final status per arm, retried attempts, crash rate, and error kinds."""
    from harness.report.render import plots

    counts = {
        arm: {k: int(v) for k, v in _arm(data, arm)["by_status"].items()}
        for arm in tasks.arms
        if _arm(data, arm).get("by_status")
    }
    if not counts:
        return None
    svg = plot(
        "infra", lambda: plots.infra_bars(counts, STATUS_COLORS), "Trials by final status per arm."
    )
    statuses = sorted({s for c in counts.values() for s in c}, key=plots.status_order)
    rows: list[InfraRow] = []
    for arm, c in counts.items():
        inf = _arm(data, arm).get("infra") or {}
        outcomes = inf.get("attempts_by_outcome") or {}
        rows.append(
            {
                "arm": arm,
                "counts": [c.get(s, 0) for s in statuses],
                "retried": sum(int(v) for k, v in outcomes.items() if k != "ok"),
                "crash_rate": inf.get("crash_rate"),
            }
        )
    note = (
        "Infrastructure crashes are retried and counted, never hidden; a trial that still has "
        "no verdict after its retries is unresolved and "
        + ("counts as a failure." if tasks.denominator == "failure" else "is excluded from rates.")
    )
    causes: list[ArmCause] = [
        {"arm": arm, **c} for arm in tasks.arms for c in _causes(_arm(data, arm))["causes"]
    ]
    agent_failures: list[ArmCause] = [
        {"arm": arm, **c}
        for arm in tasks.arms
        for c in _causes(_arm(data, arm), "agent_failure_causes")["causes"]
    ]
    agent_other = {
        arm: _causes(_arm(data, arm), "agent_failure_causes")["other"] for arm in tasks.arms
    }
    return {
        "plot": svg,
        "statuses": statuses,
        "rows": rows,
        "kinds": error_kinds[:50],
        "causes": causes,
        "agent_failures": agent_failures,
        "agent_other": {a: n for a, n in agent_other.items() if n},
        "note": note,
    }


def task_table(
    tasks: tk.TaskCounts, base: str | None, *, task_link: str | None = None
) -> TaskTable | None:
    """The per-task table; ``base`` is the viewer's URL ("" for same-origin links, None for
    no links), ``task_link`` a URL prefix the task id is appended to (quoted)."""
    from urllib.parse import quote

    rows = tasks.rows
    if not rows:
        return None
    paired = bool(tasks.baseline and tasks.candidate)
    link = None if base is None else f"{base}/trial/"
    out: list[TaskTableRow] = []
    n_unstable = n_disc = 0
    for r in rows:
        unstable = any(at.unstable for at in r.arms.values())
        n_unstable += unstable
        n_disc += r.discordant > 0
        cells: list[TaskCell | None] = []
        for a in tasks.arms:
            at = r.arms.get(a)
            if not at:
                cells.append(None)
                continue
            target = at.first_fail if at.first_fail is not None else at.first
            cells.append(
                {
                    "text": f"{at.passed}/{at.n}",
                    "unresolved": at.unresolved,
                    "rate": "" if math.isnan(at.rate) else f"{at.rate:.4g}",
                    "href": f"{link}{target}" if link and target is not None else None,
                }
            )
        out.append(
            {
                "cls": " ".join(
                    c for c, on in (("unstable", unstable), ("discordant", r.discordant)) if on
                ),
                "task_id": r.task_id,
                "href": None if task_link is None else task_link + quote(r.task_id, safe=""),
                "task_class": r.task_class,
                "cluster": r.cluster,
                "cells": cells,
                "delta": r.delta,
                "discordant": r.discordant,
            }
        )
    note = (
        f"{len(rows)} tasks; {n_unstable} unstable (some trials pass, some fail, on one arm)"
        + (
            f"; {n_disc} with discordant matched trials between {tasks.baseline} and "
            f"{tasks.candidate} (same trial index, same seed)"
            if paired
            else ""
        )
        + ". Counts are passed/counted trials (unresolved trials "
        + ("count as failures" if tasks.denominator == "failure" else "are left out")
        + "); each links to the first failing trial (else the first trial) in the viewer. "
        "Click a header to sort."
    )
    return {"arms": tasks.arms, "paired": paired, "rows": out, "note": note}
