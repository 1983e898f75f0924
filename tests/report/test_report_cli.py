"""`harness report` end to end on a real demo run, and the primary-comparison glue."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from harness.analysis.load import RunTable
from harness.report.compare import primary_comparison
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('demo') / 'demo.db'}"
    result = run_cli("run", "tasks/demo/suite.yaml", "--store", url, "-q", "--trials", "3")
    assert result.returncode == 0, result.stderr
    return url


def test_report_json_on_demo_run(demo_store):
    out = run_cli("report", "--json", "--store", demo_store)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["schema"] == "harness.report/2"
    assert set(data["arms"]) == {"baseline", "candidate"}
    for arm in data["arms"].values():
        assert arm["tasks"] == 36 and arm["clusters"] == 6
        assert arm["trials_scheduled"] == arm["trials_completed"] == 108
        s = arm["success"]
        assert s["lo"] <= s["estimate"] <= s["hi"] and s["n"] == 36
        assert [p["k"] for p in arm["pass_hat_k"]] == [1, 2, 3]
        assert arm["pass_hat_k"][0]["estimate"] == pytest.approx(s["estimate"])
        assert arm["pass_hat_k_predicted"]["prediction"] is True
        assert arm["infra"]["attempts"] >= 108
        assert arm["usage"]["latency"]["n"] == 108
        assert {r["name"] for r in arm["slices"]["class"]} == {"arithmetic", "counting", "lookup"}
    assert data["settings"]["primary"] == {"baseline": "baseline", "candidate": "candidate"}
    assert data["versions"]["config_hash"] == data["run"]["config_hash"]
    comparison = data["comparison"]
    try:
        import harness.release.compare  # noqa: F401
    except ImportError:
        assert comparison is None
    else:
        assert comparison["baseline_arm"] == "baseline"
        assert comparison["lo"] <= comparison["estimate"] <= comparison["hi"]
        assert set(comparison["table"]) == {"both_pass", "fixed", "broke", "both_fail"}


def test_report_markdown_and_terminal_on_demo_run(demo_store):
    md = run_cli("report", "--markdown", "--store", demo_store)
    assert md.returncode == 0, md.stderr
    text = md.stdout
    assert text.startswith("## Run `")
    for needle in ("*Estimand:*", "| baseline |", "pass^k", "By class", "*Versions:*"):
        assert needle in text
    # The terminal renderer in-process (the `run` command above already printed it once).
    from harness.report import load_report
    from harness.report.render.terminal import render

    buf = io.StringIO()
    render(load_report(None, demo_store, n_resamples=500), Console(file=buf, width=160))
    out = buf.getvalue()
    assert "candidate − baseline: " in out and "PREDICTION" in out and "latency: p50" in out


def test_comparison_receives_the_arms_trials(monkeypatch):
    seen = {}

    def fake(trials_a, trials_b, settings):
        seen.update(
            a=trials_a,
            b=trials_b,
            confidence=settings.confidence,
            key=settings.cluster_key,
            phase=settings.phase_one_trials,
        )
        return {"estimate": 0.1, "lo": 0.0, "hi": 0.2}

    monkeypatch.setattr("harness.report.compare.compare_arms", fake)
    from harness.analysis import Settings
    from harness.analysis.table import Trials
    from harness.config.roles import Roles

    trials = Trials.from_columns(
        {
            "arm": ["a", "a"],
            "task_id": ["t0", "t0"],
            "cluster": ["c0", "c0"],
            "task_class": ["x", "x"],
            "status": ["passed", "infra_error"],
            "trial_index": [0, 1],
            "seed": [2**62 + 1, 5],
        }
    )
    data = RunTable("r", trials)
    settings = Settings(confidence=0.9, cluster_key="task", phase_one_trials=1)
    result, warning = primary_comparison(data, Roles("a", "b", None, "report"), settings)
    assert warning is None and result["baseline_arm"] == "a" and result["estimate"] == 0.1
    assert seen["phase"] == 1  # adaptive repeats: the headline reads phase one
    assert len(seen["b"]) == 0 and seen["confidence"] == 0.9 and seen["key"] == "task"
    a = seen["a"]  # the baseline's trials, one entry per trial
    assert a.task.values().tolist() == ["t0", "t0"] and a.cluster.values().tolist() == ["c0"] * 2
    assert a.task_class.values().tolist() == ["x", "x"] and a.weight.tolist() == [1.0, 1.0]
    assert a.status.tolist() == [0, 2] and a.passed.tolist() == [True, False]
    assert a.trial_index.tolist() == [0, 1] and a.seed.tolist() == [2**62 + 1, 5]
    assert a.variant.values().tolist() == ["", ""]
