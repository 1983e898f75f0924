"""The A/A noise floor appears with n and interval in the terminal and Markdown reports, and a
floor of exactly zero is marked degenerate there too (not only in the HTML report)."""

from __future__ import annotations

import io

from rich.console import Console

from harness.report import load_report
from harness.report.render.markdown import render_markdown
from harness.report.render.terminal import render
from tests.report.report_support import grid_rows, make_store

PRIMARY = {"report": {"primary": {"baseline": "base", "candidate": "cand"}}}


def _report(url: str, aa_flips: int) -> dict:
    """20 tasks in 10 clusters; the A/A arm repeats the baseline except on ``aa_flips`` tasks."""
    base = {f"t{i:02d}": [i % 2] for i in range(20)}
    cand = {t: [1] for t in base}
    aa = {t: [1 - y[0] if i < aa_flips else y[0]] for i, (t, y) in enumerate(base.items())}
    clusters = {t: f"c{i // 2}" for i, t in enumerate(base)}
    rows = grid_rows("base", base, clusters)
    rows += grid_rows("cand", cand, clusters) + grid_rows("base-aa", aa, clusters)
    url_db = f"sqlite:///{url}"
    make_store(url_db, rows, arms=["base", "cand", "base-aa"], suite=PRIMARY)
    return load_report("run-1", url_db, n_resamples=200)


def _terminal(report: dict) -> str:
    buf = io.StringIO()
    render(report, Console(file=buf, width=400, color_system=None))
    return buf.getvalue()


def test_zero_floor_is_flagged_with_n_and_interval_in_terminal_and_markdown(tmp_path):
    report = _report(str(tmp_path / "z.db"), aa_flips=0)
    floor = report["class_deltas"]["noise_floor"]
    assert floor["degenerate"] and floor["estimate"] == 0.0
    for text in (_terminal(report), render_markdown(report)):
        line = next(x for x in text.splitlines() if "noise floor (A/A, base-aa − base)" in x)
        assert "+0.0 pts [" in line and "n = 20 tasks" in line
        assert "DEGENERATE" in line and floor["degenerate_reason"][:30] in line


def test_moving_floor_is_shown_without_the_flag(tmp_path):
    report = _report(str(tmp_path / "m.db"), aa_flips=3)
    floor = report["class_deltas"]["noise_floor"]
    assert not floor["degenerate"] and floor["lo"] < floor["estimate"] < floor["hi"]
    for text in (_terminal(report), render_markdown(report)):
        line = next(x for x in text.splitlines() if "noise floor (A/A" in x)
        assert "n = 20 tasks" in line and "DEGENERATE" not in line


def test_report_class_deltas_refuse_an_interval_below_the_minimum_clusters(tmp_path):
    """20 tasks in 10 clusters, classes of 3 clusters (refused) and 7 (still refused) beside
    the overall delta over all 10 clusters (kept)."""
    base = {f"t{i:02d}": [i % 2] for i in range(20)}
    cand = {t: [int(i % 3 != 0)] for i, t in enumerate(base)}
    clusters = {t: f"c{i // 2}" for i, t in enumerate(base)}
    classes = {t: "small" if i < 6 else "big" for i, t in enumerate(base)}
    rows = grid_rows("base", base, clusters, classes) + grid_rows("cand", cand, clusters, classes)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    make_store(url, rows, arms=["base", "cand"], suite=PRIMARY)
    deltas = load_report("run-1", url, n_resamples=200)["class_deltas"]
    assert deltas["overall"]["lo"] is not None and deltas["overall"]["n_clusters"] == 10
    by = {c["class"]: c for c in deltas["by_class"]}
    assert by["small"]["n_clusters"] == 3 and by["big"]["n_clusters"] == 7
    for c in by.values():
        assert c["lo"] is None and c["hi"] is None
        assert c["warning"].startswith(f"no interval: only {c['n_clusters']} clusters")
    from harness.report.html_page import build_html

    page = build_html("run-1", url, viewer_url=None)
    assert page.count("(no interval: too few clusters)") == 2
