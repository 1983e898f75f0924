"""The HTML report: one self-contained file per run (inline CSS, JS and SVG; no network).

    write_html(run_id, store_url, path)          # what `harness html` and `report --html` call

Sections, each drawn only when its data exist: headline (rates with intervals, n, method,
versions), release-gate verdict, forest plot of per-class paired deltas with the A/A noise
floor, pass^k and pass@k against k, cost against accuracy (Pareto front, convex hull),
calibration, infrastructure errors, and a sortable, filterable per-task table whose counts
link to the trial pages of ``harness view`` (``viewer_url``).

Numbers come from the report data (``load_report``). The renderer reads it with ``.get()``
and tolerates absent keys; where a section is missing from the report data it is derived
from the store rows by ``harness.report.tasks`` with ``harness.stats`` and labelled so.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from harness.report import tasks as dv
from harness.report.render.page import badge, e, money, num, page, pct, signed_pp
from harness.viewer import DEFAULT_VIEWER_URL

STATUS_COLORS = {
    "passed": "#2b8a3e",
    "failed": "#e03131",
    "infra_error": "#f08c00",
    "grader_error": "#ae3ec9",
    "harness_error": "#495057",
}


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
    out.write_text(build_html(run_id, store_url, viewer_url=viewer_url), encoding="utf-8")
    return out


def build_html(
    run_id: str | None, store_url: str | None, *, viewer_url: str = DEFAULT_VIEWER_URL
) -> str:
    from harness.report.cli import load_report
    from harness.store import Store, resolve_url

    url = resolve_url(store_url)
    data = load_report(run_id, url)
    store = Store(url)
    try:
        run = store.get_run(data["run"]["id"])
        rr = dv.load_rows(store, run)
        infra = dv.infra_breakdown(store, run.id)
        gate = gate_verdict(run, store, data)
    finally:
        store.close()
    return render(data, run, rr, infra=infra, gate=gate, viewer_url=viewer_url)


def gate_verdict(run, store, data: dict[str, Any]) -> dict[str, Any] | None:
    """The release gate's verdict, when the suite declares a policy and the gate is installed.

    Read defensively: the report data's own gate section first, else
    ``harness.release.api.gate_run`` when the suite has a ``gate:``; if the release package is
    absent or the gate fails, the section is omitted (``harness gate`` reports its errors).
    """
    for key in ("gate", "release"):
        v = data.get(key)
        if isinstance(v, dict) and v.get("verdict"):
            return v
    suite = (run.config or {}).get("suite", {}) if isinstance(run.config, dict) else {}
    if not suite.get("gate"):
        return None
    try:
        from harness.release.api import gate_run
    except ImportError:
        return None
    try:
        result = gate_run(store, run.id)
    except Exception:  # noqa: BLE001 - optional section; never lose the report over it
        return None
    return result if isinstance(result, dict) and result.get("verdict") else None


# ---------------------------------------------------------------------------- helpers
def interval(obj: Any) -> tuple[float | None, float | None, float | None]:
    """(estimate, lo, hi) from {"estimate","lo","hi"} / {"ci": [lo, hi]} / a bare number."""
    if isinstance(obj, int | float) and not isinstance(obj, bool):
        return float(obj), None, None
    if not isinstance(obj, dict):
        return None, None, None
    est = obj.get("estimate", obj.get("mean", obj.get("delta")))
    lo, hi = obj.get("lo"), obj.get("hi")
    ci = obj.get("ci") or obj.get("interval")
    if (lo is None or hi is None) and isinstance(ci, list | tuple) and len(ci) == 2:
        lo, hi = ci
    f = lambda x: float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None  # noqa: E731
    return f(est), f(lo), f(hi)


def fmt_interval(obj: Any, fmt=pct) -> str:
    est, lo, hi = interval(obj)
    if est is None:
        return "—"
    if lo is None or hi is None:
        return fmt(est)
    return f"{fmt(est)} <span class='muted'>[{fmt(lo)}, {fmt(hi)}]</span>"


def _section(title: str, anchor: str, body: str, note: str = "") -> str:
    note_html = f'<p class="muted small">{note}</p>' if note else ""
    return f'<section id="{e(anchor)}"><h2>{e(title)}</h2>{body}{note_html}</section>'


def _figure(name: str, svg: str, caption: str) -> str:
    return (
        f'<figure class="plot" id="plot-{e(name)}" data-plot="{e(name)}">{svg}'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def _plot(name: str, draw, caption: str) -> str:
    """Draw one plot; a missing matplotlib or a drawing error becomes a note, not a crash."""
    from harness.report.render.plots import MatplotlibMissing

    try:
        return _figure(name, draw(), caption)
    except MatplotlibMissing as exc:
        return f'<p class="muted">({e(exc)})</p>'


# ---------------------------------------------------------------------------- render
def render(
    data: dict[str, Any],
    run,
    rr: dv.RunRows,
    *,
    infra: dict[str, Any] | None = None,
    gate: dict[str, Any] | None = None,
    viewer_url: str | None = DEFAULT_VIEWER_URL,
    title_prefix: str = "Report",
) -> str:
    t0 = time.perf_counter()
    from harness.report.render.plots import arm_colors

    rows = dv.task_rows(rr)
    colors = arm_colors(rr.arms)
    info = data.get("run") or {}
    run_id = info.get("id") or run.id
    parts = [
        _header(data, run, rr),
        _gate_section(gate) if gate else "",
        _headline(data, rr),
        _forest_section(data, gate, rr, rows),
        _passk_section(data, rr, rows, colors),
        _cost_section(data, rr, colors),
        _calibration_section(data, rr, colors),
        _infra_section(data, rr, infra or {}),
        _task_section(rows, rr, None if viewer_url is None else viewer_url.rstrip("/")),
    ]
    took = time.perf_counter() - t0
    parts.append(
        f'<p class="muted small">Generated by harness {e(info.get("harness_version", ""))} '
        f"in {took:.1f} s from the store; self-contained (no network)."
        + (
            f" Trial links point to <code>harness view</code> at {e(viewer_url)}."
            if viewer_url
            else ""
        )
        + "</p>"
    )
    nav = "".join(
        f'<a href="#{a}">{t}</a>'
        for a, t in (
            ("headline", "headline"),
            ("forest", "deltas"),
            ("passk", "pass^k"),
            ("cost", "cost"),
            ("calibration", "calibration"),
            ("infra", "errors"),
            ("tasks", "tasks"),
        )
    )
    return page(f"{title_prefix} {run_id}", "".join(parts), nav=nav)


def _header(data: dict[str, Any], run, rr: dv.RunRows) -> str:
    info = data.get("run") or {}
    suite_cfg = (run.config or {}).get("suite", {}) if isinstance(run.config, dict) else {}
    arms_cfg = {a.get("name"): a for a in suite_cfg.get("arms", []) if isinstance(a, dict)}
    kv = [
        ("suite", info.get("suite", run.suite_name)),
        ("status", info.get("status", run.status)),
        (
            "started / finished",
            f"{info.get('started_at') or '—'} / {info.get('finished_at') or '—'}",
        ),
        ("harness version", info.get("harness_version", run.harness_version)),
        ("config hash", (info.get("config_hash") or run.config_hash or "")[:16]),
        ("sandbox", info.get("sandbox", run.sandbox)),
        ("seed", info.get("seed", run.seed)),
        ("trials per task", info.get("trials_per_task", run.trials_per_task)),
    ]
    images = info.get("image_ids") or run.image_ids or {}
    versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    graders = versions.get("grader_versions") or {}
    if isinstance(graders, dict) and graders:
        kv.append(
            (
                "grader versions",
                ", ".join(
                    f"{g} v{'/'.join(map(str, v)) if isinstance(v, list) else v}"
                    for g, v in sorted(graders.items())
                ),
            )
        )
    head = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in kv)
    if images:
        head += (
            "<tr><th>images</th><td>"
            + "<br>".join(f"{e(k)}: <code>{e(v)}</code>" for k, v in sorted(images.items()))
            + "</td></tr>"
        )
    arm_rows = []
    for a in rr.arms:
        spec = arms_cfg.get(a, {})
        model = spec.get("model") or {}
        model_name = model.get("name") or model.get("model") if isinstance(model, dict) else model
        role = (
            "baseline"
            if a == rr.baseline
            else "candidate"
            if a == rr.candidate
            else "A/A copy of baseline"
            if a == rr.aa_arm
            else ""
        )
        arm_rows.append(
            f'<tr><td><span style="color:{_color(rr, a)}">●</span> {e(a)}</td><td>{e(role)}</td>'
            f"<td>{e(spec.get('agent', ''))}</td><td>{e(model_name or '—')}</td>"
            f"<td><code>{e(_short_json(spec.get('params')))}</code></td></tr>"
        )
    arms_html = (
        "<table><thead><tr><th>arm</th><th>role</th><th>agent</th><th>model</th><th>params</th>"
        f"</tr></thead><tbody>{''.join(arm_rows)}</tbody></table>"
    )
    return (
        f"<h1>Run {e(info.get('id', run.id))}</h1>"
        f'<p class="muted">{e(suite_cfg.get("description", ""))}</p>'
        f'<div class="cards"><div><table class="kv">{head}</table></div><div>{arms_html}</div></div>'
    )


def _color(rr: dv.RunRows, arm: str) -> str:
    from harness.report.render.plots import arm_colors

    return arm_colors(rr.arms).get(arm, "#495057")


def _short_json(v: Any, limit: int = 80) -> str:
    import json

    if not v:
        return ""
    s = json.dumps(v, default=str, separators=(",", ":"))
    return s if len(s) <= limit else s[: limit - 1] + "…"


GOOD_VERDICTS = ("improvement", "non-inferior", "pass", "passed", "ship", "go")
BAD_VERDICTS = ("regression", "fail", "failed", "block", "blocked", "no-go")


def _gate_section(gate: dict[str, Any]) -> str:
    """The gate's verdict, the sentence behind it, its policy, checks and warnings."""
    verdict = str(gate.get("verdict", "")).strip()
    low = verdict.lower()
    if gate.get("may_ship") is True or low in GOOD_VERDICTS:
        cls = "v-pass"
    elif gate.get("blocked_by_must_never") or low in BAD_VERDICTS:
        cls = "v-fail"
    else:
        cls = "v-inconclusive"
    reasons = gate.get("reasons") or gate.get("reason") or []
    if isinstance(reasons, str):
        reasons = [reasons]
    items = "".join(f"<li>{e(r)}</li>" for r in reasons)
    policy = gate.get("policy")
    policy_html = ""
    if isinstance(policy, dict):
        bits = [f"rule {policy.get('rule')}"]
        if policy.get("margin") is not None:
            bits.append(f"margin {pct(policy['margin'])}")
        if policy.get("sides"):
            bits.append(f"{policy['sides']} at {pct(policy.get('confidence'), 0)}")
        if policy.get("max_unresolved") is not None:
            bits.append(f"max unresolved {pct(policy['max_unresolved'])}")
        if policy.get("must_never"):
            bits.append("must-never classes " + ", ".join(map(str, policy["must_never"])))
        src = gate.get("policy_source")
        policy_html = f'<p class="muted">policy ({e(src or "suite")}): {e("; ".join(bits))}</p>'
    primary = gate.get("primary") if isinstance(gate.get("primary"), dict) else {}
    primary_html = ""
    if primary.get("estimate") is not None:
        primary_html = (
            f"<p>{e(gate.get('candidate'))} − {e(gate.get('baseline'))}: "
            f"{fmt_interval(primary, signed_pp)} "
            f'<span class="muted">({e(num(primary.get("n_tasks")))} tasks, '
            f"{e(num(primary.get('n_clusters')))} clusters; {e(primary.get('method', ''))}; "
            f"{e(primary.get('test') or '')} p = {e(num(primary.get('p_value')))})</span></p>"
        )
    checks = []
    for c in gate.get("must_never") or []:
        if isinstance(c, dict):
            checks.append((f"must never: {c.get('name', '')}", c.get("status"), c.get("message")))
    cov = gate.get("coverage")
    if isinstance(cov, dict) and cov.get("status"):
        checks.append(
            ("unresolved coverage", cov["status"], f"worst share {pct(cov.get('worst_share'))}")
        )
    check_rows = "".join(
        f"<tr><td>{e(n)}</td><td>{badge(str(st))}</td><td>{e(d or '')}</td></tr>"
        for n, st, d in checks
    )
    checks_html = (
        "<table><thead><tr><th>check</th><th>status</th><th>detail</th></tr></thead>"
        f"<tbody>{check_rows}</tbody></table>"
        if check_rows
        else ""
    )
    warnings = "".join(f"<li>{e(w)}</li>" for w in gate.get("warnings") or [])
    warn_html = f"<h3>Warnings</h3><ul class='reasons'>{warnings}</ul>" if warnings else ""
    body = (
        f'<p><span class="verdict {cls}" id="gate-verdict">Release gate: {e(verdict)}</span></p>'
        f"<ul class='reasons'>{items}</ul>{primary_html}{policy_html}{checks_html}{warn_html}"
    )
    cannot = gate.get("cannot_establish") or []
    note = ("This run cannot establish: " + "; ".join(map(str, cannot))) if cannot else ""
    return _section("Release gate", "gate", body, e(note))


def _headline(data: dict[str, Any], rr: dv.RunRows) -> str:
    arms = data.get("arms") or {}
    rows = []
    methods = set()
    for arm in rr.arms:
        a = arms.get(arm) or {}
        s = a.get("success") or {}
        if s.get("method"):
            methods.add(s["method"])
        est, lo, hi = interval(s)
        n = s.get("n", a.get("tasks"))
        unit = s.get("unit", "task")
        rows.append(
            f'<tr><td><span style="color:{_color(rr, arm)}">●</span> {e(arm)}</td>'
            f'<td class="n" data-v="{est if est is not None else ""}">{fmt_interval(s)}</td>'
            f'<td class="n">{e(num(n))} {e(unit)}s</td>'
            f'<td class="n">{e(num(a.get("clusters")))}</td>'
            f'<td class="n">{e(num(a.get("trials_completed")))} / {e(num(a.get("trials_scheduled")))}</td>'
            f'<td class="n">{e(num(a.get("trials_unresolved")))}</td>'
            f'<td class="n">{e(num(a.get("unstable_tasks")))}</td></tr>'
        )
    table_html = (
        "<table><thead><tr><th>arm</th><th class='n'>success [interval]</th><th class='n'>n</th>"
        "<th class='n'>clusters</th><th class='n'>trials done / scheduled</th>"
        "<th class='n'>unresolved</th><th class='n'>unstable tasks</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    comp = _comparison(data)
    comp_html = ""
    if comp:
        est, lo, hi = interval(comp.get("delta") or comp.get("difference") or comp)
        cand = _name(comp, "candidate_arm", "candidate") or rr.candidate
        base = _name(comp, "baseline_arm", "baseline") or rr.baseline
        if est is not None:
            comp_html = (
                f'<p id="primary-comparison"><b>Primary comparison</b> {e(cand)} − {e(base)}: '
                f"{fmt_interval({'estimate': est, 'lo': lo, 'hi': hi}, signed_pp)}"
                f"{_comp_extra(comp)}</p>"
            )
    conf = next(
        (
            a.get("success", {}).get("confidence")
            for a in arms.values()
            if isinstance(a, dict) and a.get("success")
        ),
        rr.confidence,
    )
    settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    denominator = settings.get("denominator_text") or (
        "unresolved trials count as failures"
        if rr.denominator == "failure"
        else "unresolved trials are excluded"
    )
    note = (
        f"Estimand: {e(data.get('estimand', 'success rate'))}. "
        f"Interval{'s' if len(methods) > 1 else ''}: {e('; '.join(sorted(methods)) or 'as reported')}, "
        f"{pct(conf, 0)} confidence. {e(denominator[:1].upper() + denominator[1:])}."
    )
    warnings = [w for w in data.get("warnings") or [] if isinstance(w, str)]
    warn_html = (
        '<ul class="reasons warnings">' + "".join(f"<li>⚠ {e(w)}</li>" for w in warnings) + "</ul>"
        if warnings
        else ""
    )
    return _section(
        "Headline", "headline", table_html + comp_html + warn_html + _slices(data, rr), note
    )


def _name(d: dict[str, Any], *keys: str) -> str | None:
    for k in keys:
        if isinstance(d.get(k), str):
            return d[k]
    return None


def _slices(data: dict[str, Any], rr: dv.RunRows) -> str:
    """Success by task class per arm (the report data's class slices)."""
    arms = data.get("arms") or {}
    by_arm: dict[str, dict[str, Any]] = {}
    for arm in rr.arms:
        sl = ((arms.get(arm) or {}).get("slices") or {}).get("class")
        if isinstance(sl, list):
            by_arm[arm] = {x.get("name"): x for x in sl if isinstance(x, dict)}
    names = sorted({n for d in by_arm.values() for n in d if n is not None})
    if len(names) < 2:
        return ""
    head = "<tr><th>class</th>" + "".join(f"<th class='n'>{e(a)}</th>" for a in by_arm) + "</tr>"
    body = "".join(
        f"<tr><td>{e(n)}</td>"
        + "".join(
            f"<td class='n'>{fmt_interval(d.get(n))}"
            f"{' <span class=muted>(' + num(d[n].get('tasks')) + ' tasks)</span>' if d.get(n) else ''}</td>"
            for d in by_arm.values()
        )
        + "</tr>"
        for n in names
    )
    return f"<h3>Success by class</h3><table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _comp_extra(comp: dict[str, Any]) -> str:
    bits = []
    for key, label in (
        ("p_value", "p"),
        ("n", "n"),
        ("n_tasks", "tasks"),
        ("n_clusters", "clusters"),
    ):
        v = comp.get(key)
        if isinstance(v, int | float):
            bits.append(f"{label} = {num(v)}")
    method = comp.get("method")
    if method:
        bits.append(str(method))
    return f' <span class="muted">({e("; ".join(bits))})</span>' if bits else ""


def _comparison(data: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("primary_comparison", "primary", "comparison"):
        v = data.get(key)
        if isinstance(v, dict) and v:
            return v
    comps = data.get("comparisons")
    if isinstance(comps, list) and comps and isinstance(comps[0], dict):
        return comps[0]
    return None


def _class_rows(obj: Any) -> list[dict[str, Any]]:
    """Per-class deltas as [{"label", "estimate", "lo", "hi", "n"}] from several shapes."""
    if isinstance(obj, dict):
        items = [
            {"class": k, **v} if isinstance(v, dict) else {"class": k, "estimate": v}
            for k, v in obj.items()
        ]
    elif isinstance(obj, list):
        items = [i for i in obj if isinstance(i, dict)]
    else:
        return []
    out = []
    for i in items:
        est, lo, hi = interval(i.get("delta") if isinstance(i.get("delta"), dict) else i)
        if est is None:
            continue
        label = i.get("class") or i.get("task_class") or i.get("label") or i.get("name") or "?"
        out.append(
            {
                "label": str(label),
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "n": i.get("n", i.get("n_tasks", i.get("tasks"))),
            }
        )
    return out


def _noise(obj: Any) -> tuple[float, float] | None:
    if isinstance(obj, int | float) and not isinstance(obj, bool):
        return (-abs(float(obj)), abs(float(obj)))
    est, lo, hi = interval(obj)
    if lo is not None and hi is not None:
        return (lo, hi)
    if isinstance(obj, dict):
        for key in ("half_width", "floor", "width"):
            v = obj.get(key)
            if isinstance(v, int | float):
                return (-abs(v), abs(v))
    return None


def _find(src: dict[str, Any], *paths: str) -> Any:
    """The first present value among dotted ``paths`` in ``src``."""
    for path in paths:
        node: Any = src
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _forest_section(data: dict[str, Any], gate: dict[str, Any] | None, rr: dv.RunRows, rows) -> str:
    """Per-class deltas from the gate, else the report data, else derived from the rows."""
    rows_out: list[dict[str, Any]] = []
    noise, overall, method = None, None, ""
    class_paths = ("screens.classes", "per_class", "by_class", "classes", "class_deltas")
    overall_paths = ("primary", "delta", "overall")
    noise_paths = ("noise_floor", "aa_noise_floor", "aa")
    sources = [("release gate", gate or {}), ("report", _comparison(data) or {}), ("report", data)]
    for name, src in sources:
        rows_out = _class_rows(_find(src, *class_paths))
        if not rows_out:
            continue
        method = f"per-class deltas as computed by the {name}"
        o = _find(src, *overall_paths)
        est, lo, hi = interval(o)
        if est is not None:
            n = o.get("n_tasks", o.get("n")) if isinstance(o, dict) else None
            overall = {"label": "overall", "estimate": est, "lo": lo, "hi": hi, "n": n}
            overall["overall"] = True
        if _find(src, *noise_paths) is not None:
            noise = _noise(_find(src, *noise_paths))
            method += f"; A/A noise floor from the {name}"
        break
    if not rows_out:
        derived = dv.class_deltas(rr, rows)
        if not derived:
            return ""
        rows_out = [
            {"label": r["class"], **{k: r[k] for k in ("estimate", "lo", "hi", "n")}}
            for r in derived["by_class"]
        ]
        overall = {"label": "overall", **derived["overall"], "overall": True}
        method = (
            derived["method"] + " (derived by the viewer: the report data has no per-class deltas)"
        )
    if noise is None:
        for name, src in sources:
            if _find(src, *noise_paths) is not None:
                noise = _noise(_find(src, *noise_paths))
                method += f"; A/A noise floor from the {name}"
                break
    if noise is None and rr.aa_arm:
        aa = dv.class_deltas(rr, rows, other=rr.aa_arm)
        if aa and aa["overall"].get("lo") is not None:
            noise = (aa["overall"]["lo"], aa["overall"]["hi"])
            method += f"; A/A noise floor: {rr.aa_arm} − {rr.baseline}, same method"
    if overall:
        rows_out = [overall, *rows_out]
    from harness.report.render import plots

    base, cand = rr.baseline, rr.candidate
    if gate:
        base, cand = gate.get("baseline") or base, gate.get("candidate") or cand
    svg = _plot(
        "forest",
        lambda: plots.forest(rows_out, noise=noise, xlabel=f"{cand} − {base} (percentage points)"),
        f"Paired per-class deltas ({e(cand)} − {e(base)}) with intervals; "
        + (
            "grey band: the A/A noise floor (the same comparison between two copies of the "
            "baseline): deltas inside it are indistinguishable from noise."
            if noise
            else "no A/A arm in this run, so no noise floor."
        ),
    )
    table_rows = "".join(
        f"<tr><td>{e(r['label'])}</td><td class='n'>{fmt_interval(r, signed_pp)}</td>"
        f"<td class='n'>{e(num(r.get('n')))}</td></tr>"
        for r in rows_out
    )
    if noise:
        table_rows += (
            f"<tr><td>A/A noise floor</td><td class='n'>[{signed_pp(noise[0])}, "
            f"{signed_pp(noise[1])}]</td><td></td></tr>"
        )
    table_html = (
        "<table><thead><tr><th>class</th><th class='n'>delta [interval]</th>"
        f"<th class='n'>tasks</th></tr></thead><tbody>{table_rows}</tbody></table>"
    )
    return _section("Per-class paired deltas", "forest", svg + table_html, e(method))


def _passk_section(data: dict[str, Any], rr: dv.RunRows, rows, colors) -> str:
    arms = data.get("arms") or {}
    trials = int((data.get("run") or {}).get("trials_per_task") or 1)
    curves: dict[str, dict[str, Any]] = {}
    reported, derived = [], []
    for arm in rr.arms:
        a = arms.get(arm) or {}
        c = {"pass_hat_k": a.get("pass_hat_k") or [], "pass_at_k": a.get("pass_at_k") or []}
        pred = a.get("pass_hat_k_predicted") or a.get("pass_k_prediction") or {}
        if isinstance(pred, dict):
            points = pred.get("points") or pred.get("pass_hat_k") or []
            c["pred_hat"] = [p for p in points if isinstance(p, dict)]
            c["pred_at"] = pred.get("pass_at_k") or []
        pred_at = a.get("pass_at_k_predicted")
        if isinstance(pred_at, dict) and isinstance(pred_at.get("points"), list):
            c["pred_at"] = [p for p in pred_at["points"] if isinstance(p, dict)]
        if c.get("pred_hat"):
            reported.append(arm)
        if (not c.get("pred_hat") or not c.get("pred_at")) and trials >= 2:
            ks = [p.get("k") for p in c.get("pred_hat") or [] if isinstance(p.get("k"), int)]
            k_max = max([2 * trials, 8, *ks])
            want = tuple(
                m for m, key in (("pass_hat", "pred_hat"), ("pass_at", "pred_at")) if not c.get(key)
            )
            d = dv.passk_prediction(rows, arm, k_max, rr.confidence, want)
            if d:
                c["pred_hat"] = c.get("pred_hat") or d["pass_hat_k"]
                c["pred_at"] = c.get("pred_at") or d["pass_at_k"]
                derived.append(arm)
        if c["pass_hat_k"] or c.get("pred_hat"):
            curves[arm] = c
    if not curves:
        return ""
    from harness.report.render import plots

    svg = _plot(
        "passk",
        lambda: plots.passk(curves, colors, trials),
        "Solid: unbiased pass^k / pass@k over the trials run (with intervals where reported). "
        "Dashed with band: beta-binomial prediction for every k, beyond the trials run.",
    )
    head = (
        "<tr><th>arm</th>"
        + "".join(f"<th class='n'>pass^{k}</th>" for k in range(1, trials + 1))
        + "</tr>"
    )
    body = ""
    for arm, c in curves.items():
        by_k = {p.get("k"): p for p in c["pass_hat_k"]}
        body += (
            f"<tr><td>{e(arm)}</td>"
            + "".join(
                f"<td class='n'>{fmt_interval(by_k.get(k))}</td>" for k in range(1, trials + 1)
            )
            + "</tr>"
        )
    notes = []
    if reported:
        notes.append(f"pass^k predictions for {', '.join(reported)} as reported (beta-binomial)")
    if derived:
        notes.append(
            f"{'pass@k' if reported else 'pass^k and pass@k'} predictions for "
            f"{', '.join(derived)} derived by the viewer (beta-binomial MLE, cluster bootstrap, "
            "200 resamples): the report data has none"
        )
    note = "; ".join(notes) + ("." if notes else "")
    return _section(
        "pass^k and pass@k",
        "passk",
        svg + f"<table><thead>{head}</thead><tbody>{body}</tbody></table>",
        e(note),
    )


def _usage(a: dict[str, Any], key: str) -> dict[str, Any]:
    usage = a.get("usage") if isinstance(a.get("usage"), dict) else {}
    v = usage.get(key) if isinstance(usage.get(key), dict) else a.get(key)
    return v if isinstance(v, dict) else {}


def _cost_section(data: dict[str, Any], rr: dv.RunRows, colors) -> str:
    """Cost per trial against success, per arm: from ``usage.cost.per_trial_usd`` when the
    report data has it, else the mean over trials with a known price."""
    arms = data.get("arms") or {}
    derived = dv.cost_points(rr)
    points, rows, sources = [], [], set()
    for arm in rr.arms:
        a = arms.get(arm) or {}
        d = derived.get(arm, {})
        cost, lat = _usage(a, "cost"), _usage(a, "latency")
        per_trial = cost.get("per_trial_usd") or cost.get("mean_per_trial")
        c_est, c_lo, c_hi = interval(per_trial)
        if c_est is not None:
            sources.add(str((per_trial or {}).get("method", "as reported")))
        else:
            c_est, c_lo, c_hi = d.get("mean_cost_usd"), None, None
            if c_est is not None:
                sources.add("mean over trials with a known price (derived by the viewer)")
        known = cost.get("known_trials", d.get("cost_known"))
        total = cost.get("trials", d.get("trials"))
        mean_lat = lat.get("mean_s") if isinstance(lat.get("mean_s"), int | float) else None
        if mean_lat is None:
            mean_lat = d.get("mean_latency_s")
        p95 = lat.get("p95_s")
        est, lo, hi = interval(a.get("success"))
        cost_cell = money(c_est) + (
            f" <span class='muted'>[{money(c_lo)}, {money(c_hi)}]</span>"
            if c_lo is not None and c_hi is not None
            else ""
        )
        per_success = interval(cost.get("per_success_usd"))[0]
        rows.append(
            f"<tr><td>{e(arm)}</td><td class='n'>{cost_cell}</td>"
            f"<td class='n'>{money(per_success)}</td>"
            f"<td class='n'>{e(num(known))} / {e(num(total))}</td>"
            f"<td class='n'>{e(num(mean_lat, 2))} s"
            f"{' <span class=muted>(p95 ' + num(p95, 2) + ' s)</span>' if isinstance(p95, int | float) else ''}</td>"
            f"<td class='n'>{fmt_interval(a.get('success'))}</td></tr>"
        )
        if c_est is not None and est is not None:
            points.append({"arm": arm, "cost": c_est, "estimate": est, "lo": lo, "hi": hi})
    if not points or all(p["cost"] == 0 for p in points):
        return ""
    from harness.report.render import plots
    from harness.stats import pareto_front, upper_convex_hull

    acc = [p["estimate"] for p in points]
    cst = [p["cost"] for p in points]
    front = [int(i) for i in pareto_front(acc, cst)]
    hull = [int(i) for i in upper_convex_hull(acc, cst)]
    svg = _plot(
        "cost",
        lambda: plots.cost_accuracy(points, colors, front, hull),
        "Each arm at its cost per trial and success rate (with interval). Green: Pareto "
        "front (no arm is both cheaper and better). Dashed: upper convex hull, what random "
        "mixtures of arms can reach at each budget.",
    )
    table_html = (
        "<table><thead><tr><th>arm</th><th class='n'>cost / trial [interval]</th>"
        "<th class='n'>cost / success</th><th class='n'>price known</th>"
        "<th class='n'>mean latency</th><th class='n'>success</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    on_front = ", ".join(points[i]["arm"] for i in front)
    note = (
        f"On the Pareto front: {on_front}. Cost per trial: {'; '.join(sorted(sources))}. "
        "Trials with an unknown price are left out of the cost, never counted as free."
    )
    return _section("Cost against accuracy", "cost", svg + table_html, e(note))


def _calibration_section(data: dict[str, Any], rr: dv.RunRows, colors) -> str:
    """Reliability diagram from the trials' stated confidences; ECE (with its interval)
    from ``reliability.calibration`` in the report data when present."""
    d = dv.calibration(rr)
    if not d:
        return ""
    arms = d["arms"]
    reported = {}
    for arm, a in (data.get("arms") or {}).items():
        rel = a.get("reliability") if isinstance(a, dict) else None
        cal = rel.get("calibration") if isinstance(rel, dict) else None
        if isinstance(cal, dict) and isinstance(cal.get("ece", cal.get("estimate")), int | float):
            reported[arm] = cal
            if arm in arms:
                arms[arm]["ece"] = cal.get("ece", cal.get("estimate"))
    from harness.report.render import plots

    svg = _plot(
        "calibration",
        lambda: plots.calibration(arms, colors),
        "Reliability diagram: mean stated confidence against observed success in 10 "
        "equal-width bins; marker area proportional to the trials in the bin.",
    )
    rows = "".join(
        f"<tr><td>{e(a)}</td><td class='n'>{e(num(v.get('n')))}</td>"
        f"<td class='n'>{fmt_interval(reported[a], num) if a in reported else e(num(v.get('ece')))}</td></tr>"
        for a, v in arms.items()
    )
    methods = {str(c.get("method")) for c in reported.values() if c.get("method")}
    note = "ECE: expected calibration error, " + (
        "; ".join(sorted(methods)) if methods else "10 equal-width bins (computed by the viewer)"
    )
    return _section(
        "Calibration",
        "calibration",
        svg + "<table><thead><tr><th>arm</th><th class='n'>trials with confidence</th>"
        f"<th class='n'>ECE [interval]</th></tr></thead><tbody>{rows}</tbody></table>",
        e(note),
    )


def _bin(b: Any) -> dict[str, Any] | None:
    if not isinstance(b, dict):
        return None
    conf = b.get("confidence", b.get("mean_confidence"))
    succ = b.get("success", b.get("accuracy", b.get("success_rate")))
    if not isinstance(conf, int | float) or not isinstance(succ, int | float):
        return None
    return {
        "confidence": float(conf),
        "success": float(succ),
        "n": int(b.get("n", b.get("count", 1)) or 1),
    }


def _infra_section(data: dict[str, Any], rr: dv.RunRows, infra: dict[str, Any]) -> str:
    arms = data.get("arms") or {}
    counts: dict[str, dict[str, int]] = {}
    for arm in rr.arms:
        by = (arms.get(arm) or {}).get("by_status")
        if isinstance(by, dict) and by:
            counts[arm] = {k: int(v) for k, v in by.items()}
    if not counts:
        for i in range(len(rr)):
            d = counts.setdefault(rr.cols["arm"][i], {})
            s = rr.cols["status"][i]
            d[s] = d.get(s, 0) + 1
    if not counts:
        return ""
    from harness.report.render import plots

    svg = _plot(
        "infra", lambda: plots.infra_bars(counts, STATUS_COLORS), "Trials by final status per arm."
    )
    from harness.report.render.plots import _status_order

    statuses = sorted({s for c in counts.values() for s in c}, key=_status_order)
    head = (
        "<tr><th>arm</th>"
        + "".join(f"<th class='n'>{e(s)}</th>" for s in statuses)
        + "<th class='n'>failed attempts (retried)</th>"
        + "<th class='n'>crash rate per attempt [interval]</th></tr>"
    )
    retried: dict[str, int] = {}
    for a in infra.get("failed_attempts", []):
        retried[a["arm"]] = retried.get(a["arm"], 0) + int(a["count"])
    body = "".join(
        f"<tr><td>{e(arm)}</td>"
        + "".join(f"<td class='n'>{e(num(c.get(s, 0)))}</td>" for s in statuses)
        + f"<td class='n'>{e(num(retried.get(arm, 0)))}</td>"
        + f"<td class='n'>{fmt_interval(((arms.get(arm) or {}).get('infra') or {}).get('crash_rate'))}</td></tr>"
        for arm, c in counts.items()
    )
    kinds = infra.get("unresolved") or []
    kinds_html = ""
    if kinds:
        kinds_html = (
            "<h3>Unresolved trials by error kind</h3><table><thead><tr><th>arm</th><th>status</th><th>error</th><th class='n'>trials</th></tr></thead><tbody>"
            + "".join(
                f"<tr><td>{e(k['arm'])}</td><td>{badge(k['status'])}</td><td><code>{e(k['kind'])}</code></td><td class='n'>{e(num(k['count']))}</td></tr>"
                for k in kinds[:50]
            )
            + "</tbody></table>"
        )
    note = (
        "Infrastructure crashes are retried and counted, never hidden; a trial that still has "
        "no verdict after its retries is unresolved and "
        + ("counts as a failure." if rr.denominator == "failure" else "is excluded from rates.")
    )
    return _section(
        "Infrastructure and errors",
        "infra",
        svg + f"<table><thead>{head}</thead><tbody>{body}</tbody></table>" + kinds_html,
        note,
    )


def _task_section(
    rows: list[dv.TaskRow], rr: dv.RunRows, base: str | None, *, task_link: str | None = None
) -> str:
    """The per-task table; ``base`` is the viewer's URL ("" for same-origin links, None for
    no links), ``task_link`` a URL prefix the task id is appended to (quoted)."""
    from urllib.parse import quote

    if not rows:
        return ""
    arms = rr.arms
    paired = bool(rr.baseline and rr.candidate)
    head = ["<th>task</th><th>class</th><th>cluster</th>"]
    head += [f"<th class='n'>{e(a)}</th>" for a in arms]
    if paired:
        head.append("<th class='n'>Δ rate</th><th class='n'>discordant pairs</th>")
    out = []
    n_unstable = n_disc = 0
    link = None if base is None else f"{base}/trial/"
    for r in rows:
        unstable = any(at.unstable for at in r.arms.values())
        n_unstable += unstable
        n_disc += r.discordant > 0
        cls = ("unstable " if unstable else "") + ("discordant" if r.discordant else "")
        tid = e(r.task_id)
        if task_link is not None:
            tid = f'<a href="{e(task_link)}{e(quote(r.task_id, safe=""))}">{tid}</a>'
        cells = [f'<td class="tid">{tid}</td><td>{e(r.task_class)}</td><td>{e(r.cluster)}</td>']
        for a in arms:
            at = r.arms.get(a)
            if not at:
                cells.append("<td class='n' data-v=''>—</td>")
                continue
            text = f"{at.passed}/{at.n}" + (
                f' <span class="muted">({at.unresolved} unres.)</span>' if at.unresolved else ""
            )
            target = at.first_fail if at.first_fail is not None else at.first
            rate = "" if math.isnan(at.rate) else f"{at.rate:.4g}"
            cell = (
                f'<a href="{e(link)}{target}">{text}</a>' if link and target is not None else text
            )
            cells.append(f'<td class="n" data-v="{rate}">{cell}</td>')
        if paired:
            d = "" if r.delta is None else f"{r.delta:.4g}"
            cells.append(
                f'<td class="n" data-v="{d}">{signed_pp(r.delta, 0) if r.delta is not None else "—"}</td><td class="n">{r.discordant}</td>'
            )
        out.append(f'<tr class="{cls.strip()}">{"".join(cells)}</tr>')
    toolbar = (
        '<div class="toolbar" data-filter-for="task-table">'
        '<input type="search" autocomplete="off" placeholder="filter tasks (id, class, cluster)…" aria-label="filter tasks">'
        '<label><input type="checkbox" autocomplete="off" value="unstable"> unstable only</label>'
        + (
            '<label><input type="checkbox" autocomplete="off" value="discordant"> discordant only</label>'
            if paired
            else ""
        )
        + '<span class="count muted"></span></div>'
    )
    table_html = (
        f'<table id="task-table" class="sortable"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(out)}</tbody></table>"
    )
    note = (
        f"{len(rows)} tasks; {n_unstable} unstable (some trials pass, some fail, on one arm)"
        + (
            f"; {n_disc} with discordant matched trials between {rr.baseline} and "
            f"{rr.candidate} (same trial index, same seed)"
            if paired
            else ""
        )
        + ". Counts are passed/counted trials (unresolved trials "
        + ("count as failures" if rr.denominator == "failure" else "are left out")
        + "); each links to the first failing "
        "trial (else the first trial) in the viewer. Click a header to sort."
    )
    return _section("Tasks", "tasks", toolbar + table_html, e(note))
