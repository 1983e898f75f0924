"""Report plots drawn with matplotlib (Agg-free ``Figure`` objects) and returned as SVG text.

matplotlib is the ``plots`` extra and is imported inside ``_figure`` only. Figures never go
through pyplot (no global state, safe in the viewer's threads). Text stays text in the SVG
(``svg.fonttype: none``), which keeps each plot a few kilobytes; a per-plot ``hashsalt``
keeps element ids unique when several SVGs share one HTML document.

Every function takes plain data (the section records of ``contexts``) and returns
``<svg>…</svg>``.
"""

from __future__ import annotations

import io
import math
import re
from typing import TypeGuard

from harness.report.records import PassAtK
from harness.report.render.contexts import CalibrationArm, CostPoint, ForestRow, PasskCurve

PALETTE = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#5c940d", "#495057"]


def arm_colors(arms: list[str]) -> dict[str, str]:
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(arms)}


class MatplotlibMissing(RuntimeError):
    pass


def _figure(width: float, height: float, ncols: int = 1):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MatplotlibMissing("plots need matplotlib: pip install 'harness[plots]'") from exc
    fig = Figure(figsize=(width, height), dpi=96, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    for ax in axes:
        ax.grid(True, color="#e5e8ee", linewidth=0.8)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig, list(axes)


def _svg(fig, name: str) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": f"harness-{name}", "font.size": 10}
    ):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    # Give the root a role and a label for screen readers and for tests.
    return re.sub(r"<svg ", f'<svg role="img" aria-label="{name}" ', text, count=1)


def _finite(x: object) -> TypeGuard[float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def forest(
    rows: list[ForestRow],
    *,
    noise: tuple[float | None, float | None] | None = None,
    xlabel: str = "candidate − baseline (percentage points)",
) -> str:
    """Per-class paired deltas: point and interval per row, a zero line and the A/A band.

    ``rows`` in display order (overall first); the band where both ends of ``noise`` are
    finite.
    """
    height = 0.9 + 0.38 * len(rows)
    fig, (ax,) = _figure(7.2, height)
    ys = list(range(len(rows)))[::-1]
    band_lo, band_hi = noise if noise is not None else (None, None)
    if _finite(band_lo) and _finite(band_hi):
        ax.axvspan(
            100 * band_lo,
            100 * band_hi,
            color="#adb5bd",
            alpha=0.35,
            lw=0,
            label="A/A noise floor",
        )
    ax.axvline(0, color="#495057", lw=1)
    for y, r in zip(ys, rows, strict=True):
        est = r.get("estimate")
        if est is None or not _finite(est):
            continue
        color = "#1d2330" if r.get("overall") else "#1f5fbf"
        lo, hi = r.get("lo"), r.get("hi")
        if lo is not None and hi is not None and _finite(lo) and _finite(hi):
            ax.plot([100 * lo, 100 * hi], [y, y], color=color, lw=2 if r.get("overall") else 1.4)
        ax.plot(
            [100 * est], [y], marker="D" if r.get("overall") else "o", color=color, ms=6, ls="none"
        )
    ax.set_yticks(ys, [f"{r['label']}  (n={r.get('n', '?')})" for r in rows])
    ax.set_xlabel(xlabel)
    ax.grid(False, axis="y")
    if noise is not None:
        ax.legend(loc="lower right", frameon=False, fontsize=9)
    return _svg(fig, "forest plot of per-class paired deltas")


def _observed_predicted(c: PasskCurve, at: bool) -> tuple[list[PassAtK], list[PassAtK]]:
    """(observed, predicted) points of pass@k (``at``) or pass^k."""
    return (c["pass_at_k"], c["pred_at"]) if at else (c["pass_hat_k"], c["pred_hat"])


def _points(
    points: list[PassAtK] | None,
) -> tuple[list[int], list[float], list[tuple[float, float]]]:
    """(k, estimate) of the points with a finite estimate, and their (lo, hi) when every one
    of them has a finite interval (else no band: [])."""
    ks: list[int] = []
    est: list[float] = []
    band: list[tuple[float, float]] = []
    for p in points or []:
        e, lo, hi = p.get("estimate"), p.get("lo"), p.get("hi")
        if not _finite(e):
            continue
        ks.append(p["k"])
        est.append(e)
        if _finite(lo) and _finite(hi):
            band.append((lo, hi))
    return ks, est, band if len(band) == len(est) else []


def passk(curves: dict[str, PasskCurve], colors: dict[str, str], trials: int) -> str:
    """pass^k (left) and pass@k (right) against k per arm.

    Observed points with their intervals for k <= trials, the beta-binomial prediction as a
    line with a band.
    """
    fig, axes = _figure(9.6, 3.6, ncols=2)
    for ax, at, title in (
        (axes[0], False, "pass^k: all k trials succeed"),
        (axes[1], True, "pass@k: at least one of k succeeds"),
    ):
        k_max = 1
        for arm, c in curves.items():
            color = colors.get(arm, "#495057")
            observed, predicted = _observed_predicted(c, at)
            ks, pred, band = _points(predicted)
            if pred:
                k_max = max(k_max, max(ks))
                ax.plot(ks, [100 * e for e in pred], color=color, lw=1.2, ls="--")
                if band:
                    ax.fill_between(
                        ks,
                        [100 * lo for lo, _ in band],
                        [100 * hi for _, hi in band],
                        color=color,
                        alpha=0.12,
                        lw=0,
                    )
            ks, obs, band = _points(observed)
            if obs:
                k_max = max(k_max, max(ks))
                est = [100 * e for e in obs]
                if band:
                    err = [
                        [e - 100 * lo for e, (lo, _) in zip(est, band, strict=True)],
                        [100 * hi - e for e, (_, hi) in zip(est, band, strict=True)],
                    ]
                    ax.errorbar(
                        ks,
                        est,
                        yerr=err,
                        color=color,
                        marker="o",
                        ms=5,
                        lw=1.6,
                        capsize=3,
                        label=arm,
                    )
                else:
                    ax.plot(ks, est, color=color, marker="o", ms=5, lw=1.6, label=arm)
        if trials >= 1 and k_max > trials:
            ax.axvline(trials + 0.5, color="#adb5bd", lw=1, ls=":")
            ax.text(trials + 0.6, 2, "predicted →", color="#5b6475", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("k")
        ax.set_ylabel("%")
        ax.set_ylim(-2, 102)
        ax.set_xlim(0.5, k_max + 0.5)
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[0].legend(frameon=False, fontsize=9)
    return _svg(fig, "pass^k and pass@k against k")


def cost_accuracy(
    points: list[CostPoint], colors: dict[str, str], front: list[int], hull: list[int]
) -> str:
    """Mean cost per trial against success rate per arm, with the Pareto front and hull.

    ``front``/``hull``: indices into ``points`` by increasing cost.
    """
    fig, (ax,) = _figure(6.4, 4.0)
    for p in points:
        color = colors.get(p["arm"], "#495057")
        y = 100 * p["estimate"]
        lo, hi = p["lo"], p["hi"]
        if _finite(lo) and _finite(hi):
            ax.errorbar(
                [p["cost"]],
                [y],
                yerr=[[y - 100 * lo], [100 * hi - y]],
                color=color,
                marker="o",
                ms=7,
                capsize=3,
                ls="none",
            )
        else:
            ax.plot([p["cost"]], [y], color=color, marker="o", ms=7, ls="none")
        ax.annotate(p["arm"], (p["cost"], y), xytext=(6, 4), textcoords="offset points", fontsize=9)
    if len(hull) >= 2:
        ax.plot(
            [points[i]["cost"] for i in hull],
            [100 * points[i]["estimate"] for i in hull],
            color="#868e96",
            ls="--",
            lw=1,
            label="convex hull (mixtures)",
        )
    if front:
        xs: list[float] = []
        ys: list[float] = []
        for i in front:  # a staircase: nothing below-right of the front is worth buying
            if xs:
                xs.append(points[i]["cost"])
                ys.append(ys[-1])
            xs.append(points[i]["cost"])
            ys.append(100 * points[i]["estimate"])
        ax.plot(
            xs,
            ys,
            color="#2b8a3e",
            lw=1.6,
            label="Pareto front (ringed)",
        )
        ax.plot(
            [points[i]["cost"] for i in front],
            [100 * points[i]["estimate"] for i in front],
            ls="none",
            marker="o",
            ms=15,
            mfc="none",
            mec="#2b8a3e",
            mew=1.6,
        )
    ax.set_xlabel("mean cost per trial (USD)")
    ax.set_ylabel("success rate (%)")
    ax.set_xlim(left=0)
    ax.margins(x=0.15, y=0.1)
    ax.legend(frameon=False, fontsize=9, loc="lower right")
    return _svg(fig, "cost against accuracy")


def calibration(arms: dict[str, CalibrationArm], colors: dict[str, str]) -> str:
    """Reliability diagram: per-bin mean confidence against success rate, marker area ∝ n."""
    fig, (ax,) = _figure(4.8, 4.4)
    ax.plot([0, 100], [0, 100], color="#adb5bd", lw=1, ls="--", label="perfect calibration")
    for arm, a in arms.items():
        bins = a.get("bins") or []
        if not bins:
            continue
        total = max(1, sum(b.get("n", 1) for b in bins))
        xs = [100 * b["confidence"] for b in bins]
        ys = [100 * b["success"] for b in bins]
        label = f"{arm} (ECE {a['ece']:.3f})" if _finite(a.get("ece")) else arm
        ax.plot(xs, ys, color=colors.get(arm, "#495057"), lw=1.2, marker="o", ms=4, label=label)
        ax.scatter(
            xs,
            ys,
            s=[12 + 400 * b.get("n", 1) / total for b in bins],
            color=colors.get(arm, "#495057"),
            alpha=0.45,
        )
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("stated confidence (%)")
    ax.set_ylabel("observed success (%)")
    ax.legend(frameon=False, fontsize=9, loc="upper left")
    return _svg(fig, "calibration diagram")


def infra_bars(counts: dict[str, dict[str, int]], colors_by_status: dict[str, str]) -> str:
    """Horizontal stacked bars: per arm, trials by status (resolved statuses included)."""
    arms = list(counts)
    statuses = sorted({s for c in counts.values() for s in c}, key=status_order)
    fig, (ax,) = _figure(7.2, 0.9 + 0.42 * len(arms))
    left = [0.0] * len(arms)
    ys = list(range(len(arms)))[::-1]
    for s in statuses:
        widths = [100 * counts[a].get(s, 0) / max(1, sum(counts[a].values())) for a in arms]
        ax.barh(
            ys, widths, left=left, color=colors_by_status.get(s, "#868e96"), label=s, height=0.6
        )
        left = [lft + w for lft, w in zip(left, widths, strict=True)]
    ax.set_yticks(ys, arms)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of trials (%)")
    ax.grid(False, axis="y")
    ax.legend(
        frameon=False,
        fontsize=8,
        ncols=min(5, len(statuses)),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.35 if len(arms) < 3 else -0.2),
    )
    return _svg(fig, "trials by status")


def status_order(s: str) -> tuple[int, str]:
    order = {"passed": 0, "failed": 1, "infra_error": 2, "grader_error": 3, "harness_error": 4}
    return order.get(s, 9), s
