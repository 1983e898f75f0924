"""The report's judge section: the same numbers in JSON, terminal, Markdown and HTML as
``harness judge-agreement``, for a judged run with human labels; absent for a run no judge
graded."""

from __future__ import annotations

import html
import json
from pathlib import Path

from harness.report.render.judging import judge_blocks, judge_head, judge_line
from tests.conftest import run_cli, write_suite
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, judged_suite, rows

WIDE = {"COLUMNS": "400"}
"""A terminal wide enough that no line of the section wraps."""


def every_view(
    run_id: str, url: str, section: str, lines: list[str], page: Path
) -> tuple[str, str, str]:
    """The run's terminal section, Markdown report and HTML page, each checked to hold every
    one of ``lines`` verbatim."""
    terminal = run_cli("report", run_id, "--section", section, "--store", url, env=WIDE).stdout
    markdown = run_cli("report", run_id, "--markdown", "--store", url).stdout
    run_cli("report", run_id, "--html", str(page), "--store", url, "-q")
    text = page.read_text()
    for line in lines:
        assert line in terminal, line
        assert line in markdown, line
        assert html.escape(line, quote=False) in text, line
    return terminal, markdown, text


def test_every_report_view_shows_the_judge_section_with_the_same_numbers(tmp_path: Path) -> None:
    judge = ScriptedJudge(sensitivity=0.85, specificity=0.75, seed=4)
    with FakeOpenAI(default=judge) as server:
        suite = judged_suite(tmp_path, judge_grader(server.base_url, samples=3), n_tasks=8)
        db = tmp_path / "store.db"
        url = f"sqlite:///{db}"
        out = run_cli("run", str(suite), "--store", url, "-q", timeout=240)
        assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    run_id = trials[0]["run_id"]
    truth = {r["id"]: (r["answer"] or "").strip() == str(2 * int(r["task_id"][1:])) for r in trials}
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"trial": t, "passed": p}) + "\n" for t, p in truth.items())
    )
    assert (
        run_cli("label", run_id, str(labels), "--labeller", "ann", "--store", url).returncode == 0
    )
    # Two people label the judge's criterion: bob disagrees with ann on every third trial.
    per_criterion = tmp_path / "criteria.jsonl"
    per_criterion.write_text(
        "".join(
            json.dumps({"trial": t, "criterion": "correct", "passed": q, "labeller": who}) + "\n"
            for i, (t, p) in enumerate(truth.items())
            for who, q in (("ann", p), ("bob", p if i % 3 else not p))
        )
    )
    assert run_cli("label", run_id, str(per_criterion), "--store", url).returncode == 0

    report = json.loads(run_cli("report", run_id, "--json", "--store", url).stdout)
    agreement = json.loads(run_cli("judge-agreement", run_id, "--json", "--store", url).stdout)
    judge = report["judge"]
    assert judge == {k: v for k, v in agreement.items() if k != "run_id"}
    assert judge["agreement"]["n"] == len(trials) and judge["corrected"]["arms"]
    assert judge["judge"]["cost"]["base"]["judge_calls"] == 3 * 8 * 2  # samples 3
    assert judge["judge"]["self_disagreement"]["n"] > 0

    lines = [judge_head(judge)] + [x for _, block in judge_blocks(judge) for x in block]
    corrected = [x for x in lines if x.strip().startswith("corrected")]
    assert corrected  # the corrected rates are among the lines every view must show
    # Per criterion: Cohen's κ against the people and Krippendorff's α among them.
    per = judge["criteria"]["correct"]
    assert per["cohen_kappa"]["n"] == per["n"] and per["krippendorff_alpha"]["labellers"] == 2
    block = dict(judge_blocks(judge))["Per criterion"]
    assert sum(x.startswith("    Cohen kappa") for x in block) == 1
    assert sum(x.startswith("    Krippendorff alpha") for x in block) == 1
    assert all(len(x) <= 80 for x in block), block
    terminal, markdown, text = every_view(run_id, url, "judge", lines, tmp_path / "report.html")
    assert judge_line(judge) in terminal  # the first screen's one line
    assert "### Judge" in markdown and 'href="#judge"' in text and 'id="judge"' in text


def test_a_run_without_a_judge_has_no_judge_section(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    out = run_cli("run", str(write_suite(tmp_path)), "--store", url, "-q")
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(run_cli("report", "--json", "--store", url).stdout)
    assert "judge" not in report and "pairwise" not in report
    page = tmp_path / "report.html"
    run_cli("report", "--html", str(page), "--store", url, "-q")
    assert 'href="#judge"' not in page.read_text()
    assert 'href="#pairwise"' not in page.read_text()
    assert "judge:" not in run_cli("report", "--full", "--store", url, env=WIDE).stdout
