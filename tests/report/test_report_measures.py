"""The report's measures beside the success rate (issue 24 point 6): classification metrics of
tasks that declare `positive`, macro beside micro, partial-credit scores, and the fixed-suite
estimand — the same numbers in JSON, terminal, Markdown and HTML."""

from __future__ import annotations

import json

import numpy as np
import pytest

import harness.stats as hs
from harness.report import load_report
from harness.report.render.measures import measures_lines
from harness.stats.fixed_suite import fixed_suite_estimate
from tests.report.report_support import make_store, trial


def _detector_rows() -> tuple[list[dict], dict[str, dict]]:
    """20 guardrail tasks (8 positive: a violation is there), 3 trials each, in 10 clusters;
    plus 4 tasks of another class; graders' partial credit on every trial."""
    rng = np.random.default_rng(5)
    rows, tasks = [], {}
    for i in range(24):
        tid = f"g{i:02d}"
        guard = i < 20
        positive = guard and i < 8
        p = 0.75 if positive else 0.9
        for k in range(3):
            ok = bool(rng.random() < p)
            rows.append(
                trial(
                    "arm",
                    tid,
                    k,
                    "passed" if ok else "failed",
                    cluster=f"c{i // 2}",
                    task_class="guardrail" if guard else "other",
                    score=1.0 if ok else float(rng.choice([0.0, 0.25, 0.5])),
                )
            )
        tasks[tid] = {"instruction": "x", **({"positive": positive} if guard else {})}
    return rows, tasks


@pytest.fixture
def detector(store_url):
    rows, tasks = _detector_rows()
    make_store(store_url, rows, trials=3, tasks=tasks)
    return rows, tasks


def _task_counts(rows: list[dict]) -> tuple[list[str], np.ndarray, np.ndarray]:
    tasks = sorted({r["task_id"] for r in rows})
    c = np.array([sum(r["status"] == "passed" for r in rows if r["task_id"] == t) for t in tasks])
    n = np.array([sum(1 for r in rows if r["task_id"] == t) for t in tasks])
    return tasks, c, n


def test_classification_tasks_get_precision_recall_and_a_confusion_matrix(detector, store_url):
    rows, tasks = detector
    m = load_report("run-1", store_url, n_resamples=200)["arms"]["arm"]["measures"]
    cls = m["classification"]
    assert cls["tasks"] == 20 and cls["positive_tasks"] == 8 and cls["negative_tasks"] == 12
    guard = [r for r in rows if "positive" in tasks[r["task_id"]]]
    truth = np.array([tasks[r["task_id"]]["positive"] for r in guard], dtype=float)
    passed = np.array([r["status"] == "passed" for r in guard])
    flagged = hs.trial_predictions(truth, passed)
    cells = hs.confusion(truth, flagged).as_dict()
    assert cls["confusion_trials"] == {k: int(v) for k, v in cells.items()}
    direct = hs.classification_metrics(truth, flagged, [r["cluster"] for r in guard])
    for name in ("precision", "recall", "specificity", "f1", "accuracy"):
        e, rec = direct.metric(name), cls["metrics"][name]
        assert e is not None and rec is not None
        assert rec["estimate"] == pytest.approx(e.estimate)
        assert (rec["lo"], rec["hi"]) == pytest.approx((e.lo, e.hi))  # equal trials per task
        assert rec["n_clusters"] == e.n_units and rec["unit"] == "trial"
    # recall is the positive tasks' success rate
    pos = [r for r in guard if tasks[r["task_id"]]["positive"]]
    assert cls["metrics"]["recall"]["estimate"] == pytest.approx(
        np.mean([r["status"] == "passed" for r in pos])
    )


def test_macro_beside_micro_when_classes_are_unbalanced(detector, store_url):
    rows, _ = detector
    arm = load_report("run-1", store_url, n_resamples=200)["arms"]["arm"]
    mac = arm["measures"]["macro"]
    assert mac["classes"] == {"guardrail": 20, "other": 4}
    tasks, c, n = _task_counts(rows)
    rates = c / n
    guard = np.array([int(t[1:]) < 20 for t in tasks])
    assert mac["macro"]["estimate"] == pytest.approx(
        (rates[guard].mean() + rates[~guard].mean()) / 2
    )
    assert mac["micro"]["estimate"] == pytest.approx(arm["success"]["estimate"])
    assert (mac["micro"]["lo"], mac["micro"]["hi"]) == pytest.approx(
        (arm["success"]["lo"], arm["success"]["hi"])
    )


def test_partial_credit_scores_get_a_mean_with_interval_and_their_distribution(detector, store_url):
    rows, _ = detector
    sc = load_report("run-1", store_url, n_resamples=200)["arms"]["arm"]["measures"]["scores"]
    tasks = sorted({r["task_id"] for r in rows})
    per_task = np.array([np.mean([r["score"] for r in rows if r["task_id"] == t]) for t in tasks])
    clusters = [next(r["cluster"] for r in rows if r["task_id"] == t) for t in tasks]
    e = hs.mean_estimate(per_task, clusters)
    assert sc["mean"]["estimate"] == pytest.approx(e.estimate)
    assert (sc["mean"]["lo"], sc["mean"]["hi"]) == pytest.approx((e.lo, e.hi))
    scores = np.array([r["score"] for r in rows])
    assert sc["trials"] == 72 and sum(b["trials"] for b in sc["histogram"]) == 72
    assert sc["share_bottom"] == pytest.approx(np.mean(scores < 0.4))


def test_pass_fail_scores_add_no_score_section(store_url):
    rows = [
        trial("arm", f"t{i}", 0, "passed" if i % 2 else "failed", score=float(i % 2))
        for i in range(6)
    ]
    make_store(store_url, rows)
    m = load_report("run-1", store_url, n_resamples=200)["arms"]["arm"]["measures"]
    assert m["scores"] is None and m["classification"] is None and m["macro"] is None


@pytest.mark.parametrize("how", ["suite", "flag"])
def test_fixed_suite_estimand_gives_the_interval_conditional_on_the_tasks(store_url, how):
    rows, tasks = _detector_rows()
    suite = {"report": {"estimand": "fixed-suite"}} if how == "suite" else None
    make_store(store_url, rows, trials=3, tasks=tasks, suite=suite)
    kw = {"estimand": "fixed-suite"} if how == "flag" else {}
    data = load_report("run-1", store_url, n_resamples=200, **kw)
    _, c, n = _task_counts(rows)
    e = fixed_suite_estimate(c, n)
    s = data["arms"]["arm"]["success"]
    assert (s["lo"], s["hi"]) == pytest.approx((e.lo, e.hi)) and s["method_key"] == "fixed-suite"
    assert "held fixed" in s["estimand"] and "held fixed" in data["estimand"]
    assert data["settings"]["estimand"] == "fixed-suite"
    other = data["arms"]["arm"]["measures"]["other_estimand"]
    assert other["method_key"] == "logit-cr2" and "population" in other["estimand"]
    assert other["hi"] - other["lo"] > s["hi"] - s["lo"]  # tasks as draws: wider


def test_superpopulation_is_the_default_and_its_sentence_says_so(detector, store_url):
    data = load_report("run-1", store_url, n_resamples=200)
    s = data["arms"]["arm"]["success"]
    assert s["method_key"] == "logit-cr2" and "population" in data["estimand"]
    assert data["arms"]["arm"]["measures"]["other_estimand"]["method_key"] == "fixed-suite"


def test_every_view_prints_the_same_measures(detector, store_url):
    import io

    from rich.console import Console

    from harness.report.html_page import build_html
    from harness.report.render.markdown import render_markdown
    from harness.report.render.terminal import render

    data = load_report("run-1", store_url, n_resamples=200)
    lines = measures_lines(data["arms"]["arm"]["measures"])
    assert len(lines) == 5  # classification, confusion, macro, scores, other estimand
    f1 = data["arms"]["arm"]["measures"]["classification"]["metrics"]["f1"]
    hs_pct = f"{100 * f1['estimate']:.1f}%"
    assert hs_pct in lines[0]
    buf = io.StringIO()
    render(data, Console(file=buf, width=120, color_system=None), sections=["measures"])
    terminal = " ".join(buf.getvalue().split())
    markdown = render_markdown(data)
    html = build_html("run-1", store_url, viewer_url=None, data=json.loads(json.dumps(data)))
    for line in lines:
        assert " ".join(line.split()) in terminal
    assert hs_pct in markdown and hs_pct in html
    assert "confusion matrix (counted trials)" in markdown and "macro average" in html


def test_the_estimand_flag_from_the_cli(detector, store_url):
    from tests.conftest import run_cli

    out = run_cli("report", "run-1", "--json", "--estimand", "fixed-suite", "--store", store_url)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["arms"]["arm"]["success"]["method_key"] == "fixed-suite"
    bad = run_cli("report", "run-1", "--estimand", "fixed", "--store", store_url)
    assert bad.returncode == 2 and "superpopulation or fixed-suite" in bad.stderr
    assert "Traceback" not in bad.stderr
