"""`harness report` begins with a one-screen summary: per arm the headline with n and
interval (the same interval as the JSON), the primary comparison with fixed/broke and the
must-never checks beside them, the gate's verdict when the suite declares a gate, the
unresolved trials and one line naming the rest (--full, --section)."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from harness.analysis.load import DECISIONS
from harness.commands.options import REPORT_SECTIONS
from harness.report import load_report
from harness.report.cli import declared_gate, load_report_table
from harness.report.render.markdown import render_markdown
from harness.report.render.numbers import rate_text
from harness.report.render.release import comparison_lines
from harness.report.render.terminal import render
from harness.store import Store
from tests.conftest import run_cli
from tests.report.report_support import grid_rows, make_store

SUMMARY_LINES = 40


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[str, dict]:
    """The demo suite (36 tasks in 6 clusters, 2 arms, 2 trials each: the summary's length
    does not depend on the trials) and its report data."""
    url = f"sqlite:///{tmp_path_factory.mktemp('summary') / 'demo.db'}"
    result = run_cli("run", "tasks/demo/suite.yaml", "--store", url, "-q", "--trials", "2")
    assert result.returncode == 0, result.stderr
    data = json.loads(run_cli("report", "--json", "--store", url).stdout)
    return url, data


def _lines(text: str, summary: bool = True) -> list[str]:
    lines = text.splitlines()
    assert not [x for x in lines if len(x) > 80], "wider than 80 columns"
    if summary:  # rich leaves a space where it wraps; the summary wraps its own lines
        assert not [x for x in lines if x != x.rstrip()], "trailing spaces"
    assert "\x1b[" not in text, "colour codes in piped output"
    return lines


def test_default_report_is_one_screen_at_80_columns(demo, monkeypatch):
    url, data = demo
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli("report", "--store", url)
    assert out.returncode == 0, out.stderr
    lines = _lines(out.stdout)
    assert len(lines) <= SUMMARY_LINES, out.stdout
    text = out.stdout
    for name, arm in data["arms"].items():  # the headline, exactly as the JSON holds it
        assert any(name in x and rate_text(arm["success"]) in x for x in lines), name
    c = data["comparison"]
    assert f"{c['candidate_arm']} − {c['baseline_arm']}: " in text
    t = c["table"]
    assert f"tasks: fixed {t['fixed']}, broke {t['broke']}," in text
    assert "must-never: none declared" in text
    assert re.search(r"\ngate: [A-Z-]+, (may|do not) ship \(`harness gate` exits 1\d\)\n", text)
    assert "rule: non-inferiority, margin 10.0 pts, one-sided at 95%" in text
    assert "unresolved trials (no verdict): baseline 0 of 72, candidate 0 of 72" in text
    assert f"harness report {data['run']['id']}" in text and "--full" in text
    assert "pass^k (all k succeed)" not in text and "PREDICTION" not in text


def _terminal(data: dict, **kwargs) -> str:
    buf = io.StringIO()
    render(data, Console(file=buf, width=80, color_system=None), **kwargs)
    return buf.getvalue()


def test_full_report_keeps_every_section_and_sections_pick(demo):
    url, data = demo
    full = _terminal(data)  # the CLI's --full: every section
    _lines(full, summary=False)
    # two trials per task: too few to check a pass^k model, so the prediction says why not
    assert "withheld: needs at least 3 trials per task" in " ".join(full.split())
    # ... and still bounds it whatever the shape of the task rates
    assert "whatever the shape of the task rates: pass^4 " in " ".join(full.split())
    for needle in ("── method", "by class", "latency: p50", "primary comparison"):
        assert needle in full, needle
    assert "versions: harness" in full and "more: --full" not in full
    picked = _terminal(data, sections=["pass-k", "versions"], more="harness report X")
    assert "pass^k (all k succeed)" in picked and "versions: harness" in picked
    assert "success with interval (n tasks)" not in picked  # the slices' tables
    assert "latency: p50" not in picked and "── method" not in picked
    assert "more: --full" in picked and "harness report X --full" in picked
    bad = run_cli("report", "--section", "everything", "--store", url)
    assert bad.returncode == 2 and "no section 'everything'" in bad.stderr
    assert "pass-k" in bad.stderr and "Traceback" not in bad.stderr


def test_sections_are_the_ones_help_lists():
    out = run_cli("report", "--help", env={"COLUMNS": "200"}).stdout
    assert ", ".join(REPORT_SECTIONS) in " ".join(out.split())


def _must_never_store(url: str, *, gate: bool = True) -> None:
    """The candidate fails the must-never task 'wipe' 2 of 5 times: a per-task rate of 60%,
    so fixed/broke counts it passed in both arms. With ``gate``, the gate names its class
    must-never; without, the task itself is flagged ``must_never: true`` and no gate is
    declared."""
    base = {f"t{i}": [1, 1, 1, 0, 1] for i in range(6)} | {"wipe": [1, 1, 1, 1, 1]}
    cand = {f"t{i}": [1, 1, 1, 1, 1] for i in range(6)} | {"wipe": [1, 0, 1, 0, 1]}
    classes = {"wipe": "destructive"}
    suite: dict = {"report": {"primary": {"baseline": "base", "candidate": "cand"}}}
    tasks = None
    if gate:
        suite["gate"] = {"rule": "non-inferiority", "margin": 0.1, "must_never": ["destructive"]}
    else:
        tasks = {t: {"must_never": t == "wipe"} for t in base}
    rows = grid_rows("base", base, classes=classes) + grid_rows("cand", cand, classes=classes)
    make_store(url, rows, arms=["base", "cand"], trials=5, suite=suite, tasks=tasks).close()


def test_must_never_failures_are_beside_fixed_and_broke(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'mn.db'}"
    _must_never_store(url)
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli("report", "--store", url)
    assert out.returncode == 0, out.stderr
    lines = _lines(out.stdout)
    broke = next(i for i, x in enumerate(lines) if "tasks: fixed" in x)
    assert "broke 0" in lines[broke]  # the per-task rate hides it; the table's count does not
    assert "; must-never 2/5 trials failed" in " ".join(" ".join(lines[broke : broke + 2]).split())
    mn = next(i for i, x in enumerate(lines) if "must-never: class" in x)
    assert lines[mn].startswith("  must-never: class destructive: VIOLATED, 2/5 trials failed")
    assert "wipe#1" in out.stdout and "wipe#3" in out.stdout  # ...nor does the must-never line
    assert "gate: NO-VERDICT, do not ship (`harness gate` exits 14)" in out.stdout
    # the gate's reason says the fraction as well as the rate
    gate_json = json.loads(run_cli("gate", "run-1", "--json", "--store", url).stdout)
    assert gate_json["reasons"][0].startswith(
        "must-never: class destructive violated: 2/5 trials failed (40.0%): wipe#1, wipe#3"
    ), gate_json["reasons"]
    store = Store(url)
    try:
        run = store.get_run("run-1")
        gate = declared_gate(store, run, load_report_table(store, run, DECISIONS))
    finally:
        store.close()
    md = render_markdown(load_report("run-1", url, n_resamples=200), gate=gate)
    assert "must-never: class destructive: VIOLATED" in md and "### Release gate" in md
    # the gate's arm rates are at its own level (one-sided 95%: 90% two-sided): labelled so
    assert isinstance(gate, dict) and gate["primary"] is not None
    arms = comparison_lines(gate["primary"], gate["policy"])[:2]
    assert all(line.endswith("(one-sided 95% bounds)") for line in arms), arms


def test_must_never_is_in_the_summary_without_a_gate(tmp_path, monkeypatch):
    """A task flagged ``must_never: true`` in a suite with no gate: the summary, the full
    report, Markdown and the JSON all carry its check beside fixed/broke."""
    url = f"sqlite:///{tmp_path / 'mn.db'}"
    _must_never_store(url, gate=False)
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli("report", "--store", url)
    assert out.returncode == 0, out.stderr
    text = " ".join(" ".join(_lines(out.stdout)).split())
    assert "broke 0, both pass 7, both fail 0; must-never 2/5 trials failed" in text
    want = (
        "must-never: tasks marked must_never: VIOLATED, 2/5 trials failed (40.0%): wipe#1, wipe#3"
    )
    assert want in text and "gate:" not in text
    data = json.loads(run_cli("report", "--json", "--store", url).stdout)
    mn = data["must_never"]
    assert (mn["arm"], mn["trials"], mn["failed"]) == ("cand", 5, 2)
    assert [c["status"] for c in mn["checks"]] == ["violated"]
    assert want in " ".join(_terminal(data).split())  # and the full report's comparison
    md = run_cli("report", "--markdown", "--store", url).stdout
    assert "must\\_never: VIOLATED, 2/5 trials failed (40.0%): wipe\\#1, wipe\\#3" in md
    assert "must-never 2/5 trials failed" in md


def test_full_report_has_no_trailing_spaces(demo, monkeypatch):
    url, _ = demo
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli("report", "--full", "--store", url)
    assert out.returncode == 0, out.stderr
    lines = _lines(out.stdout)  # the summary's checks: 80 columns, no trailing spaces
    assert len(lines) > SUMMARY_LINES and any("── method" in x for x in lines)


def test_degenerate_fit_is_said_in_words_not_numbers(tmp_path):
    """Every task at one rate (binomial counts, no spread of task rates beyond binomial noise):
    the beta-binomial fit sits at its concentration bound (a + b = 2e^9). Every task passing
    exactly 3 of 5 is less spread than binomial noise allows: no model fits, so withheld."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    make_store(url, grid_rows("a", {f"t{i}": [1, 0, 1, 0, 1] for i in range(12)}), trials=5)
    pred = load_report("run-1", url, n_resamples=200)["arms"]["a"]["pass_hat_k_predicted"]
    assert pred["points"] == [] and "does not fit the per-task pass counts" in pred["withheld"]
    url = f"sqlite:///{tmp_path / 'd.db'}"
    counts = [1, 3, 1, 4, 3, 3, 2, 4, 2, 3, 2, 3]  # binomial(5, 0.6) draws
    rows = grid_rows("a", {f"t{i}": [1] * k + [0] * (5 - k) for i, k in enumerate(counts)})
    make_store(url, rows, trials=5).close()
    data = load_report("run-1", url, n_resamples=200)
    pred = data["arms"]["a"]["pass_hat_k_predicted"]
    assert pred["degenerate"] and pred["a"] + pred["b"] > 1e3
    buf = io.StringIO()
    render(data, Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    assert "beta-binomial fit DEGENERATE: no spread of task rates" in " ".join(text.split())
    assert "a=" not in text
