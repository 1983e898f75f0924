"""Every command's output is readable at 80 columns and survives a pipe: no cell cut to '…',
no line wider than 80, the identifying values whole (columns are dropped by priority, with a
note that says so without calling a pipe a narrow terminal), no colour codes and no
progress bar when stdout and stderr are not terminals."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_usage_errors import _commands, _main
from tests.conftest import REPO

DEMO = REPO / "tasks" / "demo" / "suite.yaml"
CUSTOM = REPO / "examples" / "custom"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('narrow')}/h.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "80")
        code, out, err = _main("run", str(DEMO), "--trials", "1", "--store", url)
    assert code == 0, err
    _piped(out, err)
    run_id = json.loads(_main("runs", "--json", "--store", url)[1])[0]["id"]
    return url, run_id, out


COMMANDS = [
    ["report"],
    ["report", "--full"],
    ["runs"],
    ["history", "demo"],
    ["compare", "latest"],
    ["gate", "latest"],
    ["plan", "--run", "latest"],
    ["plan", "--base", "0.6", "--lift", "0.1"],
    ["plan", "--bar", "0.8", "--rate", "0.9"],
    ["export", "latest", "-o", "run.jsonl"],
    ["export", "latest", "--format", "inspect", "-o", "inspect"],
    ["html", "latest", "-o", "r.html"],
    ["judge-agreement", "latest"],
    ["anchors", "fit", str(DEMO)],
]
WITHOUT_STORE = [
    ["validate", str(DEMO), "--limit", "2"],
    ["lock", "custom/suite.yaml"],
    ["gc", "--dry-run"],  # lists only: never removes another test's leftovers
    ["--version"],
]
NOT_HERE = {
    "view": "a server, not one screen of output: tests/browser drives its pages",
    "agents": "stages CLI builds from the network: tests/agents covers its messages",
    "import": "needs the third-party trees: tests/interop runs it",
    "import-log": "run below after export, it needs the file export writes",
    "label": "needs a labels file naming the run's trials: tests/graders/test_judge_agreement",
    "pairwise": "needs a judge endpoint: tests/graders/test_pairwise reads its table at 80 columns",
}


def test_every_command_is_checked_here():
    checked = {argv[0] for argv in COMMANDS + WITHOUT_STORE} | {"run"}  # run: the fixture
    assert set(_commands()) <= checked | set(NOT_HERE)


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_table_readable_at_80_columns(argv, store, monkeypatch, tmp_path):
    url, run_id, _ = store
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)  # files named as users name them: relative to where they are
    code, out, err = _main(*argv, "--store", url)
    assert code in (0, 10, 11), err
    _readable(out)
    _readable(err)
    _piped(out, err)
    if argv[0] in ("report", "runs", "history", "gate"):
        assert run_id in out
    if argv[0] in ("compare", "gate"):
        assert "arithmetic" in out and "counting" in out  # class names whole
    if argv[:2] == ["export", "latest"] and argv[-1].endswith(".jsonl"):
        code, out, err = _main("import-log", argv[-1], "--store", f"{url}.copy")
        assert code == 0, err
        _readable(out + err)
        _piped(out, err)


@pytest.mark.parametrize("argv", WITHOUT_STORE, ids=" ".join)
def test_commands_without_a_store_at_80_columns(argv, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    shutil.copytree(CUSTOM, tmp_path / "custom")
    monkeypatch.chdir(tmp_path)
    code, out, err = _main(*argv)
    assert code == 0, err
    _readable(out)
    _readable(err)
    _piped(out, err)


def test_run_summary_readable_at_80_columns(store):
    _readable(store[2])
    assert "candidate" in store[2] and "unresolved trials (no verdict)" in store[2]


def _piped(out: str, err: str) -> None:
    """What a pipe must not carry: colour codes, a live bar, a 'narrow terminal' claim."""
    for text in (out, err):
        assert "\x1b[" not in text, text
        assert "narrow terminal" not in text, text
    assert "━" not in err, err  # the live bar's glyph: a pipe gets a line every 10% instead


def _readable(text: str) -> None:
    assert "…" not in text, text
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, wide
    # rich crops a table wider than the terminal: its right border would be missing
    cropped = [
        line
        for line in text.splitlines()
        if line[:1] in "┏┃┡│└" and line.rstrip()[-1:] not in "┓┃┩│┘"
    ]
    assert not cropped, cropped


@pytest.mark.parametrize("width", [80, 100])
def test_progress_bar_keeps_counts_and_eta_at_80_columns(width):
    """A live bar's line, rendered as rich renders it on a terminal of ``width`` columns:
    the title gives way (cut with '…') before done/total, the counts or the ETA do."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    from harness.progress import progress_columns

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    bar = Progress(*progress_columns(), console=console, expand=True)
    task = bar.add_task(
        "run 20261202-005821-d81f6c7f", total=3600, counts="1234 passed 567 failed 12 errored"
    )
    bar.update(task, completed=1813)
    console.print(bar.make_tasks_table(bar.tasks))
    line = buf.getvalue().rstrip("\n")
    assert len(line) <= width and "\n" not in line, line
    assert "1813/3600 1234 passed 567 failed 12 errored" in line, line
    assert line.endswith(" ETA -:--:--") and "━" in line, line


def test_long_suite_and_arm_names_stay_whole_at_80_columns(tmp_path, monkeypatch):
    """Names too long for a table at 80 columns: the rows become lines, never split names
    ('support -nightl y', 'baselin e')."""
    import re

    from sqlalchemy import text

    from tests.report.report_support import grid_rows, make_store

    base, cand = "baseline-gpt-4o-mini-2024", "candidate-gpt-4o-mini-finetuned"
    suite_name = "support-nightly-regression-suite"
    url = f"sqlite:///{tmp_path / 'long.db'}"
    rows = grid_rows(base, {f"t{i}": [1, 0] for i in range(4)})
    rows += grid_rows(cand, {f"t{i}": [1, 1] for i in range(4)})
    primary = {"report": {"primary": {"baseline": base, "candidate": cand}}}
    store = make_store(url, rows, arms=[base, cand], trials=2, suite=primary)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE runs SET suite_name = :n"), {"n": suite_name})
    store.close()
    monkeypatch.setenv("COLUMNS", "80")
    for argv in (["runs"], ["report"]):
        code, out, err = _main(*argv, "--store", url)
        assert code == 0, err
        _readable(out)
        _piped(out, err)
        for name in (base, cand, suite_name):
            assert re.search(rf"(^|\s){re.escape(name)}[:,]?(\s|$)", out), (name, out)
