"""Every view says the same number: real suites run through ``harness run``, then
``report --json``, Markdown, HTML, ``compare --json``, ``gate --json`` and ``history --json``
must agree on every quantity they share (estimate, interval, n, unit, arm roles) to the last
digit. The suites cover each way roles are declared: ``gate.primary`` only, ``report.primary``
only (with ``cluster_key: task``), and an A/A arm of each naming style (``aa: true``'s
``-aa``, ``_aa``, ``.aa``, a twin configured like the baseline, at the suite's own
confidence). All runs share one store (one ``harness run`` per suite, simulated agents on
unsafe-local), so the views also pick the right run among several."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.report.render.numbers import delta_text, rate_text, signed_points
from tests.cli.test_usage_errors import _main
from tests.conftest import REPO

TASKS = str(REPO / "tasks" / "demo" / "tasks.yaml")


def _arm(name: str, a: float, b: float = 2.0) -> dict:
    return {"name": name, "agent": "simulated", "params": {"a": a, "b": b}}


GATE = {"rule": "improvement", "sides": "two-sided", "confidence": 0.95, "max_unresolved": 1.0}
SUITES = {
    "gate-primary-only": (
        {
            "arms": [_arm("first", 2.0), _arm("cand", 4.0), _arm("base", 3.0)],
            "gate": {**GATE, "primary": {"baseline": "base", "candidate": "cand"}},
        },
        ("base", "cand", None),
    ),
    "report-primary-task-unit": (
        {
            "arms": [_arm("cand", 4.0), _arm("base", 3.0)],
            "aa": True,
            "report": {"primary": {"baseline": "base", "candidate": "cand"}, "cluster_key": "task"},
            "gate": GATE,
        },
        ("base", "cand", "base-aa"),
    ),
    "aa-underscore": (
        {"arms": [_arm("base", 3.0), _arm("cand", 4.0), _arm("base_aa", 3.0)], "gate": GATE},
        ("base", "cand", "base_aa"),
    ),
    "aa-dot": (
        {"arms": [_arm("base", 3.0), _arm("base.aa", 3.0), _arm("cand", 2.5)], "gate": GATE},
        ("base", "cand", "base.aa"),
    ),
    "aa-twin": (
        {
            "arms": [_arm("base", 3.0), _arm("cand", 4.0), _arm("twin", 3.0)],
            "report": {"primary": {"baseline": "base", "candidate": "cand"}, "confidence": 0.9},
            "gate": {**GATE, "confidence": 0.9},
        },
        ("base", "cand", "twin"),
    ),
}
SHARED = ("estimate", "lo", "hi", "n", "unit")
TRIALS = {"gate-primary-only": 2, "report-primary-task-unit": 2}
"""Two trials per task (the sign test, per-trial pairing) for these; one for the others
(the exact McNemar test): both designs are compared, and the runs stay short."""


def _json(*argv: str) -> dict:
    code, out, err = _main(*argv)
    assert code in (0, 10, 11, 12, 13), err
    return json.loads(out)


def _same(a: dict, b: dict, keys=SHARED, what: str = "") -> None:
    assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}, what


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, dict[str, str]]:
    """One store holding a run of every suite: (store URL, suite name -> run id)."""
    tmp = tmp_path_factory.mktemp("views")
    store = f"sqlite:///{tmp / 'views.db'}"
    ids: dict[str, str] = {}
    for name, (spec, _) in SUITES.items():
        suite = {
            "name": name,
            "seed": 7,
            "trials": TRIALS.get(name, 1),
            "tasks": [TASKS],
            "environments_dir": str(REPO / "environments"),
            "sandbox": "unsafe-local",
            "concurrency": 8,
            **spec,
        }
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(suite))
        code, _, err = _main("run", str(path), "--store", store, "-q")
        assert code == 0, err
        ids[name] = _json("runs", "--store", store, "--json")[0]["id"]
    assert len(set(ids.values())) == len(SUITES)
    return store, ids


@pytest.mark.parametrize("name", list(SUITES))
def test_every_view_says_the_same_number(runs, name):
    _, (base, cand, aa) = SUITES[name]
    store, ids = runs
    run = ids[name]
    report = _json("report", run, "--store", store, "--json")
    assert report["run"]["id"] == run
    compare = _json("compare", run, "--store", store, "--json")
    gate = _json("gate", run, "--store", store, "--json")
    history = _json("history", name, "--store", store, "--json")["runs"][-1]
    assert gate["run_id"] == run and history["run_id"] == run

    # arm roles
    assert report["roles"] == {"baseline": base, "candidate": cand, "aa": aa}
    assert compare["baseline_side"].endswith(f":{base}")
    assert compare["candidate_side"].endswith(f":{cand}")
    assert (gate["baseline"], gate["candidate"]) == (base, cand)

    # the primary comparison: report, its forest plot's overall row, compare, gate
    comparison = report["comparison"]
    assert comparison is not None
    _same(comparison, compare, what="report vs compare")
    _same(comparison, gate["primary"], what="report vs gate")
    _same(comparison, report["class_deltas"]["overall"], what="report vs its class deltas")
    assert comparison["n_clusters"] == compare["n_clusters"] == gate["primary"]["n_clusters"]

    # per-class deltas: the report's forest plot, compare's and the gate's screens
    by_class = {c["class"]: c for c in report["class_deltas"]["by_class"]}
    for screens in (compare["screens"], gate["screens"]):
        assert set(by_class) == {c["class"] for c in screens["classes"]}
        for c in screens["classes"]:
            _same(by_class[c["class"]], c, what=f"class {c['class']}")

    # the A/A noise floor in every view, or in none
    floors = [
        report["class_deltas"]["noise_floor"],
        compare["noise_floor"],
        gate["noise_floor"],
        history["noise_floor"],
    ]
    if aa is None:
        assert floors == [None] * 4
    else:
        for f in floors[1:]:
            _same(floors[0], f, (*SHARED, "arm", "degenerate"), what="noise floor")

    # each arm's rate (one estimate record everywhere): the report, compare's sides, history
    arms = report["arms"]
    for side, arm in (("baseline", base), ("candidate", cand)):
        _same(compare[side], arms[arm]["success"], what=f"compare {side} vs report")
    for h in history["arms"]:
        _same(h, arms[h["arm"]]["success"], (*SHARED, "confidence"), what=f"history {h['arm']}")

    # the rendered pages print those numbers with the one formatting module
    from harness.report.html_page import build_html
    from harness.report.render.markdown import render_markdown

    markdown = render_markdown(report)  # what `report --markdown` prints, from the same data
    html = build_html(None, store, viewer_url=None, data=report)
    assert delta_text(comparison) in markdown
    assert signed_points(comparison["estimate"]) in html
    for arm in (base, cand):
        assert rate_text(arms[arm]["success"]) in markdown, arm
    if aa is not None:
        assert delta_text(floors[0]) in markdown
