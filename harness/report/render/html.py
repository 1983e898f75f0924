"""The HTML report: one self-contained file per run (inline CSS, JS and SVG; no network).

    render(data, tasks, error_kinds=..., gate=...)   # pure: report data in, one page out

The store is read, and the gate applied, by ``harness.report.html_page`` (``write_html``,
what `harness html` and `report --html` call); this module only renders.

Sections, each drawn only when its data exist: headline (rates with intervals, n, method,
versions), release-gate verdict, forest plot of per-class paired deltas with the A/A noise
floor, pass^k and pass@k against k, cost against accuracy (Pareto front, convex hull),
calibration, infrastructure errors, and a sortable, filterable per-task table whose counts
link to the trial pages of ``harness view`` (``viewer_url``).

Every number comes from the report data (``load_report``) or the gate's result; this module
and ``html_sections`` only arrange them for ``templates/report.html.j2`` (Jinja2,
autoescaped).
"""

from __future__ import annotations

import json
import time

from harness.release.records import GateResult
from harness.report import tasks as tk
from harness.report.records import Comparison, ErrorKind, Report
from harness.report.render import html_sections as hs
from harness.report.render.contexts import (
    ClassSlices,
    GateSection,
    Header,
    HeaderArm,
    HeadlineRow,
    HeadlineSection,
    JudgeSection,
    PairwiseSection,
    ReportSections,
)
from harness.report.render.measures import measures_lines
from harness.report.render.numbers import signed_points
from harness.report.render.release import balance_bound
from harness.report.render.templating import render_template
from harness.viewer import DEFAULT_VIEWER_URL

NAV = (
    ("headline", "headline"),
    ("forest", "deltas"),
    ("passk", "pass^k"),
    ("cost", "cost"),
    ("calibration", "calibration"),
    ("infra", "errors"),
    ("measures", "measures"),
    ("judge", "judge"),
    ("pairwise", "pairwise"),
    ("tasks", "tasks"),
)
GOOD_VERDICTS = ("improvement", "non-inferior", "pass", "passed", "ship", "go")
BAD_VERDICTS = ("regression", "fail", "failed", "block", "blocked", "no-go")


def render(
    data: Report,
    tasks: tk.TaskCounts,
    *,
    error_kinds: list[ErrorKind] | None = None,
    gate: GateResult | None = None,
    viewer_url: str | None = DEFAULT_VIEWER_URL,
) -> str:
    """The report page for report data ``data`` and the run's per-task table ``tasks``."""
    t0 = time.perf_counter()
    colors = hs.arm_colors(tasks.arms)
    context: ReportSections = {
        "header": header(data, tasks, colors),
        "gate": gate_context(gate) if gate else None,
        "headline": headline(data, tasks, colors),
        "forest": hs.forest(data, tasks),
        "passk": hs.passk(data, tasks, colors),
        "cost": hs.cost(data, tasks, colors),
        "calibration": hs.calibration(data, tasks, colors),
        "infra": hs.infra(data, tasks, error_kinds or []),
        "measures": measures(data),
        "judge": judge_section(data),
        "pairwise": pairwise_section(data),
        "tasks": hs.task_table(tasks, None if viewer_url is None else viewer_url.rstrip("/")),
    }
    return render_template(
        "report.html.j2",
        title=f"Report {data['run']['id']}",
        nav=[(anchor, label) for anchor, label in NAV if context.get(anchor)],
        took=time.perf_counter() - t0,
        harness_version=data["run"].get("harness_version") or "",
        viewer_url=viewer_url,
        **context,
    )


def _short_json(v: object, limit: int = 80) -> str:
    if not v:
        return ""
    s = json.dumps(v, default=str, separators=(",", ":"))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def header(data: Report, tasks: tk.TaskCounts, colors: dict[str, str]) -> Header:
    """The run's facts (suite, status, versions, images) and its arms as declared."""
    info = data["run"]
    kv: list[tuple[str, object]] = [
        ("suite", info.get("suite")),
        ("status", info.get("status")),
        (
            "started / finished",
            f"{info.get('started_at') or '—'} / {info.get('finished_at') or '—'}",
        ),
        ("harness version", info.get("harness_version")),
        ("config hash", (info.get("config_hash") or "")[:16]),
        ("sandbox", info.get("sandbox")),
        ("seed", info.get("seed")),
        ("trials per task", info.get("trials_per_task")),
    ]
    versions = data.get("versions")
    graders = (versions["grader_versions"] if versions else None) or {}
    if graders:
        kv.append(
            (
                "grader versions",
                ", ".join(f"{g} v{'/'.join(map(str, v))}" for g, v in sorted(graders.items())),
            )
        )
    specs = data.get("arm_settings") or {}
    arms: list[HeaderArm] = [
        {
            "name": a,
            "color": colors.get(a, hs.DEFAULT_COLOR),
            "role": (specs.get(a) or {}).get("role", ""),
            "agent": (specs.get(a) or {}).get("agent", ""),
            "model": (specs.get(a) or {}).get("model") or "—",
            "params": _short_json((specs.get(a) or {}).get("params")),
        }
        for a in tasks.arms
    ]
    return {
        "run_id": info["id"],
        "description": info.get("description") or "",
        "kv": kv,
        "images": sorted((info.get("image_ids") or {}).items()),
        "arms": arms,
    }


def gate_context(gate: GateResult) -> GateSection:
    """The gate's verdict, the sentence behind it, its policy, checks and warnings."""
    verdict = str(gate.get("verdict", "")).strip()
    low = verdict.lower()
    if gate.get("may_ship") is True or low in GOOD_VERDICTS:
        cls = "v-pass"
    elif gate.get("blocked_by_must_never") or low in BAD_VERDICTS:
        cls = "v-fail"
    else:
        cls = "v-inconclusive"
    reasons = gate.get("reasons") or []
    if isinstance(reasons, str):
        reasons = [reasons]
    policy = gate.get("policy") if isinstance(gate.get("policy"), dict) else None
    bits: list[str] = []
    if policy:
        bits.append(f"rule {policy.get('rule')}")
        if policy.get("margin") is not None:
            bits.append(f"margin {hs.pct(policy['margin'])}")
        if policy.get("sides"):
            bits.append(f"{policy['sides']} at {hs.pct(policy.get('confidence'), 0)}")
        if policy.get("max_unresolved") is not None:
            bits.append(f"max unresolved {hs.pct(policy['max_unresolved'])}")
        if policy.get("must_never"):
            bits.append("must-never classes " + ", ".join(map(str, policy["must_never"])))
    if isinstance(quantity := gate.get("quantity"), dict):
        bits.append(quantity["text"])
    checks = [
        (f"must never: {c.get('name', '')}", str(c.get("status")), c.get("message") or "")
        for c in gate.get("must_never") or []
        if isinstance(c, dict)
    ]
    cov = gate.get("coverage")
    if isinstance(cov, dict) and cov.get("status"):
        checks.append(
            ("unresolved coverage", cov["status"], f"worst share {hs.pct(cov.get('worst_share'))}")
        )
    bal = gate.get("balance")
    if isinstance(bal, dict) and bal.get("status") not in (None, "not applicable"):
        gaps = ", ".join(
            f"{g['what']} gap {signed_points(g['gap'])}" for g in bal.get("gaps") or []
        )
        checks.append(
            ("retry balance", bal["status"], f"{gaps}; bound {balance_bound(bal['bound'])}")
        )
    primary = gate.get("primary") or {}
    cannot = gate.get("cannot_establish") or []
    return {
        "verdict": verdict,
        "cls": cls,
        "reasons": reasons,
        "policy": "; ".join(bits) if policy else None,
        "policy_source": gate.get("policy_source") or "suite",
        "primary": gate.get("primary") if primary.get("estimate") is not None else None,
        "baseline": gate.get("baseline"),
        "candidate": gate.get("candidate"),
        "checks": checks,
        "warnings": gate.get("warnings") or [],
        "note": ("This run cannot establish: " + "; ".join(map(str, cannot))) if cannot else "",
    }


def headline(data: Report, tasks: tk.TaskCounts, colors: dict[str, str]) -> HeadlineSection:
    """Success per arm with its interval and n, the primary comparison, class slices."""
    arms = data.get("arms") or {}
    rows: list[HeadlineRow] = []
    methods: set[str] = set()
    for arm in tasks.arms:
        a = arms.get(arm) or {}
        s = a.get("success") or {}
        method = s.get("method")
        if method:
            methods.add(method)
        rows.append(
            {
                "arm": arm,
                "color": colors.get(arm, hs.DEFAULT_COLOR),
                "success": s,
                "n": s.get("n", a.get("tasks")),
                "unit": s.get("unit", "task"),
                "a": a,
            }
        )
    settings = data.get("settings")
    comp = data.get("comparison") or None
    if comp and comp.get("estimate") is None:
        comp = None
    denominator = (settings.get("denominator_text") if settings else None) or ""
    return {
        "rows": rows,
        "comparison": comp,
        "comparison_extra": _comparison_extra(comp) if comp else "",
        "warnings": [w for w in data.get("warnings") or [] if isinstance(w, str)],
        "slices": class_slices(data, tasks),
        "note": (
            f"Estimand: {data.get('estimand', 'success rate')}. "
            f"Interval{'s' if len(methods) > 1 else ''}: {'; '.join(sorted(methods)) or 'as reported'}, "
            f"{hs.pct(settings.get('confidence', 0.95) if settings else 0.95, 0)} confidence. "
            f"{denominator[:1].upper() + denominator[1:]}."
        ),
    }


def measures(data: Report) -> list[tuple[str, list[str]]] | None:
    """Each arm's measures lines, the same the terminal and Markdown print; None when none."""
    rows = [
        (name, lines)
        for name, a in (data.get("arms") or {}).items()
        if (lines := measures_lines(a.get("measures")))
    ]
    return rows or None


def judge_section(data: Report) -> JudgeSection | None:
    """The judge's lines, the same the terminal and Markdown print; None for a run no
    judge graded."""
    from harness.report.render.judging import judge_blocks, judge_head

    judge = data.get("judge")
    return {"head": judge_head(judge), "blocks": judge_blocks(judge)} if judge else None


def pairwise_section(data: Report) -> PairwiseSection | None:
    """The pairwise judge's lines, the same the terminal and Markdown print; None for a run
    with no pairwise judgements."""
    from harness.report.render.pairwise import pairwise_blocks, pairwise_head

    pairwise = data.get("pairwise")
    if not pairwise:
        return None
    return {"head": pairwise_head(pairwise), "blocks": pairwise_blocks(pairwise)}


def _comparison_extra(comp: Comparison) -> str:
    figures = (
        ("p", comp.get("p_value")),
        ("n", comp.get("n")),
        ("tasks", comp.get("n_tasks")),
        ("clusters", comp.get("n_clusters")),
    )
    bits = [f"{label} = {hs.num(x)}" for label, x in figures if isinstance(x, int | float)]
    if comp.get("method"):
        bits.append(str(comp["method"]))
    if comp.get("estimator"):
        bits.append(f"estimator: {comp['estimator']}")
    if comp.get("interval_warning"):
        bits.append(f"warning: {comp['interval_warning']}")
    return "; ".join(bits)


def class_slices(data: Report, tasks: tk.TaskCounts) -> ClassSlices | None:
    """Success by task class per arm (the report data's class slices); None below 2 classes."""
    arms = data.get("arms") or {}
    by_arm = {
        arm: {x["name"]: x for x in ((arms.get(arm) or {}).get("slices") or {}).get("class") or []}
        for arm in tasks.arms
        if arm in arms
    }
    names = sorted({n for d in by_arm.values() for n in d})
    if len(names) < 2:
        return None
    return {"arms": list(by_arm), "names": names, "by_arm": by_arm}
