"""The HTML report in headless Chromium: no console errors, verdict and plots present, no
network, a working task table; and the renderer survives report data with keys missing."""

from __future__ import annotations

import json
import re

import pytest

from harness.viewer import DEFAULT_VIEWER_URL
from tests.browser.conftest import save_screenshot
from tests.conftest import run_cli

ALL_PLOTS = ("forest", "passk", "cost", "calibration", "infra")


def _plots(dom: str) -> set[str]:
    return set(re.findall(r'data-plot="([a-z]+)"', dom))


def _external_refs(html: str) -> list[str]:
    """src/href attributes that would fetch something (links to the viewer are navigation)."""
    refs = re.findall(r'(?:src|href)="([^"#][^"]*)"', html)
    return [r for r in refs if not r.startswith(f"{DEFAULT_VIEWER_URL}/trial/")]


def test_retail_report_via_cli(browser, retail_run, tmp_path):
    url, run_id = retail_run
    out = tmp_path / "report.html"
    result = run_cli("html", run_id, "-o", str(out), "--store", url)
    assert result.returncode == 0, result.stderr
    html = out.read_text()
    assert _external_refs(html) == []
    assert "<link" not in html and "@import" not in html

    load, session = browser.open(out.as_uri())
    try:
        assert load.errors == [], load.errors
        assert "Release gate:" in load.dom
        assert re.search(
            r'id="gate-verdict"[^>]*>Release gate: (non-inferior|inconclusive|'
            r"improvement|regression|no-verdict)<",
            load.dom,
        )
        # One trial per task: no pass^k prediction, but deltas with the A/A floor, pass^1
        # and the status breakdown are all there.
        assert {"forest", "passk", "infra"} <= _plots(load.dom)
        assert "A/A noise floor" in load.dom
        assert "<svg" in load.dom
        assert f'href="{DEFAULT_VIEWER_URL}/trial/' in load.dom
        assert "retail/cancel-w1001" in load.dom
        save_screenshot(browser, session, "report-retail")
    finally:
        browser.close_tab(session)


def test_sample_report_has_every_section(browser, sample_run, tmp_path):
    from harness.report.html_page import write_html

    url, run_id = sample_run
    out = write_html(run_id, url, tmp_path / "sample.html")
    load, session = browser.open(out.as_uri())
    try:
        assert load.errors == [], load.errors
        assert set(ALL_PLOTS) <= _plots(load.dom)
        assert "Release gate: " in load.dom
        for text in ("Pareto front", "ECE", "Unresolved trials by error kind", "ModelUnavailable"):
            assert text in load.dom
        assert 'id="primary-comparison"' in load.dom or "candidate − baseline" in load.dom
        save_screenshot(browser, session, "report", docs=True)

        # The task table filters and sorts with its inline script.
        rows = "document.querySelectorAll('#task-table tbody tr')"
        total = browser.eval(f"{rows}.length", session)
        assert total == 40
        shown = browser.eval(
            "(function(){var i=document.querySelector('[data-filter-for=task-table] "
            "input[type=search]');i.value='refund';i.dispatchEvent(new Event('input'));"
            f"return Array.prototype.filter.call({rows},function(r){{return !r.hidden}}).length}})()",
            session,
        )
        assert 0 < shown < total
        browser.eval(
            "(function(){var i=document.querySelector('[data-filter-for=task-table] "
            "input[type=search]');i.value='';i.dispatchEvent(new Event('input'));})()",
            session,
        )
        first_before = browser.eval(f"{rows}[0].cells[0].textContent", session)
        browser.eval("document.querySelector('#task-table thead th').click()", session)
        browser.eval("document.querySelector('#task-table thead th').click()", session)
        first_after = browser.eval(f"{rows}[0].cells[0].textContent", session)
        assert first_before != first_after  # descending order puts the last task first
        assert (
            browser.eval(
                "document.querySelector('#task-table thead th').getAttribute('aria-sort')", session
            )
            == "descending"
        )
    finally:
        browser.close_tab(session)


def test_renderer_draws_only_the_sections_the_data_has(sample_run):
    """Optional sections (gate, deltas, predictions, cost, calibration) are left out when the
    report data has none, and markup in the data is escaped, never interpreted."""
    from harness.analysis.load import TASK_TABLE, load_run_table
    from harness.report import load_report
    from harness.report import tasks as tk
    from harness.report.render.html import render
    from harness.store import Store

    url, run_id = sample_run
    data = load_report(run_id, url, n_resamples=200)
    store = Store(url)
    rr = tk.task_counts(load_run_table(store, run_id, TASK_TABLE).trials, data)
    store.close()
    full = render(data, rr)
    assert set(ALL_PLOTS) - {"forest"} <= _plots(full)
    bare = json.loads(json.dumps(data))
    bare["class_deltas"] = None
    bare["comparison"] = None
    bare["run"]["description"] = "<script>alert(1)</script>"
    for arm in bare["arms"].values():
        arm.update(pass_hat_k=[], pass_hat_k_predicted=None, pass_at_k_predicted=None)
        arm["reliability"]["calibration"] = None
        arm["usage"]["cost"]["per_trial_usd"] = None
    html = render(bare, rr)
    assert _plots(html) == {"infra"}
    assert 'id="tasks"' in html and "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    gate = {
        "verdict": "inconclusive",
        "reasons": "too few tasks",
        "screens": {
            "classes": [{"class": "refund", "estimate": -0.1, "lo": -0.2, "hi": 0.0, "n_tasks": 8}]
        },
    }
    html = render(bare, rr, gate=gate)
    assert "Release gate: inconclusive" in html
    # the forest plot draws the report data's class deltas only, never the gate's screens
    # under the report's labels (the same numbers, from one computation, when both exist)
    assert _plots(html) == {"infra"}


@pytest.mark.parametrize("viewer_url", ["http://127.0.0.1:9999", None])
def test_trial_links_follow_the_viewer_url(sample_run, viewer_url):
    from harness.report.html_page import build_html

    url, run_id = sample_run
    html = build_html(run_id, url, viewer_url=viewer_url)
    if viewer_url:
        assert 'href="http://127.0.0.1:9999/trial/' in html
    else:
        assert "/trial/" not in html
