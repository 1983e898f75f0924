"""Package-level checks: cheap import, public API, decision helpers, aggregation."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import harness.stats as hs


def test_import_does_not_load_scipy() -> None:
    code = "import sys, harness.stats; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_public_api_names() -> None:
    for name in hs.__all__:
        assert hasattr(hs, name), name
    for fn in (hs.wilson_interval, hs.pass_at_k, hs.cluster_bootstrap_ci, hs.rerun_trap):
        assert " guide" in (fn.__doc__ or ""), fn.__name__  # names its source


REPO = Path(__file__).resolve().parents[2]
SOURCES = ("metrics", "eval-harness", "estimands", "agent-evaluation", "when-not-to-ship")


def test_sources_are_cited_by_name_and_defined_once() -> None:
    """Code cites the statistics sources by the short names docs/statistics.md defines, never
    by a document number that reads like a random seed."""
    doc = (REPO / "docs" / "statistics.md").read_text()
    for name in SOURCES:
        assert f"| *{name} guide* |" in doc, name
    numbered = re.compile(r"\b[Ss]eeds? 00[0-4]\b")
    cited = set()
    for path in [*(REPO / "harness").rglob("*.py"), *(REPO / "graders").rglob("*.py")]:
        text = path.read_text()
        assert not numbered.search(text), path
        cited |= set(re.findall(r"\b([a-z-]+) guide\b", text.lower()))
    assert set(SOURCES) <= cited


def test_per_task_counts_and_clusters() -> None:
    tasks = np.array(["b", "a", "b", "c", "a", "b"])
    outcomes = np.array([1, 0, 1, 0, 1, 0])
    tc = hs.per_task_counts(tasks, outcomes)
    assert tc.tasks.tolist() == ["a", "b", "c"]
    assert tc.successes.tolist() == [1, 2, 0] and tc.trials.tolist() == [2, 3, 1]
    rates, counts = hs.per_task_rates(tasks, outcomes)
    assert rates.tolist() == pytest.approx([0.5, 2 / 3, 0.0])
    ids, clusters = hs.task_clusters(tasks, ["r2", "r1", "r2", "r3", "r1", "r2"])
    assert ids.tolist() == ["a", "b", "c"] and clusters.tolist() == ["r1", "r2", "r3"]
    with pytest.raises(ValueError):
        hs.task_clusters(["a", "a"], ["r1", "r2"])
    assert hs.cluster_sizes(["r1", "r2", "r2"]).tolist() == [1, 2]
    # metrics guide: macro vs micro averaging
    assert hs.macro_average([1, 1, 1, 0], ["x", "x", "x", "y"]) == pytest.approx(0.5)


def test_noninferiority_verdicts() -> None:
    # when-not-to-ship guide: lower bound above -margin supports non-inferiority; upper bound below
    # -margin is a regression; an interval crossing -margin is inconclusive
    assert hs.noninferiority_verdict((-0.01, 0.04), 0.02) == "non-inferior"
    assert hs.noninferiority_verdict((-0.09, -0.03), 0.02) == "regression"
    assert hs.noninferiority_verdict((-0.05, 0.01), 0.02) == "inconclusive"
    assert hs.noninferiority_verdict((-0.02, 0.01), 0.02) == "inconclusive"  # strict rule
    assert hs.improvement_verdict((0.001, 0.05)) == "improved"
    assert hs.improvement_verdict((-0.001, 0.05)) == "not shown"
    with pytest.raises(ValueError):
        hs.noninferiority_verdict((0.0, 0.1), 0.0)


def test_the_public_api_is_the_one_docs_statistics_declares() -> None:
    """Every name ``harness.stats`` exports is listed in docs/statistics.md ("Public API"),
    and nothing else is: exporting a function is a decision, written down."""
    doc = (REPO / "docs" / "statistics.md").read_text()
    section = doc.split("\n## Public API\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {
        name
        for row in rows
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", row.split("|")[2])
    }
    assert listed == set(hs.__all__)
