"""Run references work in every command that takes a run: ``latest``, ``latest~N``, a run id,
a unique start of one, and ``RUN:ARM`` where an arm means something; a reference naming no
run or several is exit 2 with one line. Commands that only read refuse a store that does not
exist (exit 2) and create nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_usage_errors import _main
from tests.conftest import REPO, write_suite

REFS = ("latest", "latest~0", "latest~1", "full id", "unique prefix")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[str, list[str], Path]:
    """A store holding two runs of one suite: (url, [older id, newer id], suite file)."""
    root = tmp_path_factory.mktemp("refs")
    suite = write_suite(root / "s", n_tasks=2)
    url = f"sqlite:///{root / 'h.db'}"
    for trials in ("1", "2"):
        code, _, err = _main("run", str(suite), "--store", url, "-q", "--trials", trials)
        assert code == 0, err
    code, out, err = _main("runs", "--json", "--store", url)
    assert code == 0, err
    newer, older = (r["id"] for r in json.loads(out))
    return url, [older, newer], suite


def _expected(ref: str, ids: list[str]) -> tuple[str, str]:
    """(the reference as typed, the id it must name)."""
    older, newer = ids
    return {
        "latest": ("latest", newer),
        "latest~0": ("latest~0", newer),
        "latest~1": ("latest~1", older),
        "full id": (older, older),
        "unique prefix": (older[:-2], older),
    }[ref]


def _named_run(command: str, ref: str, url: str, tmp_path: Path) -> str:
    """Run ``command`` on ``ref`` and return the run id its output is about."""
    store = ("--store", url)
    if command == "report":
        code, out, err = _main("report", ref, "--json", *store)
        assert code == 0, err
        return json.loads(out)["run"]["id"]
    if command == "html":
        page = tmp_path / "r.html"
        code, _, err = _main("html", ref, "-o", str(page), *store)
        assert code == 0, err
        [run_id] = set(re.findall(r"\d{8}-\d{6}-[0-9a-f]{8}", page.read_text()))
        return run_id
    if command == "export jsonl":
        code, out, err = _main("export", ref, *store)
        assert code == 0, err
        return json.loads(out.splitlines()[0])["run"]["id"]
    if command == "export inspect":
        logs = tmp_path / f"logs-{ref}"
        code, _, err = _main("export", ref, "--format", "inspect", "-o", str(logs), *store)
        assert code == 0, err
        [run_id] = {json.loads(p.read_text())["eval"]["run_id"] for p in logs.iterdir()}
        return run_id
    if command == "compare":
        code, out, err = _main("compare", ref, "--json", *store)
        assert code in (0, 7), err
        return json.loads(out)["baseline_side"].split(":")[0]
    if command == "gate":
        policy = tmp_path / "p.yaml"
        policy.write_text("rule: non-inferiority\nmargin: 0.5\n")
        code, out, err = _main("gate", ref, "--policy", str(policy), "--json", *store)
        assert code in (0, 10, 11, 12, 13), err
        return json.loads(out)["run_id"]
    if command == "plan --run":
        code, out, err = _main("plan", "--run", ref, "--json", *store)
        assert code == 0, err
        return json.loads(out)["run_id"]
    if command == "run --resume":
        code, out, err = _main("run", "--resume", ref, "-q", *store)
        assert code == 0, err
        return err.split("run id: ", 1)[1].split()[0]
    if command == "view":
        return _view_page(ref, url).split("/run/", 1)[1].split("/")[0]
    raise AssertionError(command)


def _view_page(ref: str, url: str) -> str:
    """The page `harness view REF` says it serves (the server is stopped at once)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "view", ref, "--store", url, "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("harness view: http://127.0.0.1:"), proc.stderr.read()
        return line.split()[2]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


COMMANDS = (
    "report",
    "html",
    "export jsonl",
    "export inspect",
    "compare",
    "gate",
    "plan --run",
    "run --resume",
    "view",
)


SLOW = {"view": 7, "html": 5}
"""Seconds per call here (a server process; plots): two forms each, the resolver is shared."""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_reference_form_names_the_same_run_in_every_command(command, two_runs, tmp_path):
    url, ids, _ = two_runs
    for form in ("latest~1", "unique prefix") if command in SLOW else REFS:
        ref, want = _expected(form, ids)
        assert _named_run(command, ref, url, tmp_path) == want, (command, form)


def test_run_arm_where_an_arm_means_something(two_runs, tmp_path):
    url, (older, newer), _ = two_runs
    code, out, err = _main("compare", "latest~1:cand", f"{newer[:-2]}:base", "--json", "--force",
                           "--store", url)  # fmt: skip
    assert code == 0, err
    c = json.loads(out)
    assert (c["baseline_side"], c["candidate_side"]) == (f"{older}:cand", f"{newer}:base")
    page = _view_page("latest~1:cand", url)
    assert page.endswith(f"/run/{older}/trials?arm=cand"), page
    logs = tmp_path / "one-arm"
    code, _, err = _main("export", "latest:cand", "--format", "inspect", "-o", str(logs),
                         "--store", url)  # fmt: skip
    assert code == 0, err
    [log] = logs.iterdir()
    assert json.loads(log.read_text())["eval"]["metadata"]["harness_arm"] == "cand"


@pytest.mark.parametrize(
    "argv",
    [
        ("report", "latest:base"),
        ("html", "latest:base"),
        ("export", "latest:base"),
        ("gate", "latest:base"),
        ("plan", "--run", "latest:base"),
        ("run", "--resume", "latest:base"),
        ("compare", "latest:nope"),
        ("report", "latest:"),
    ],
)
def test_an_arm_where_none_fits_is_one_line_exit_2(argv, two_runs):
    url, _, _ = two_runs
    code, out, err = _main(*argv, "--store", url)
    assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
    assert "Traceback" not in err and "latest:" in err


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("latest~2", "holds only 2 run(s)"),
        ("zzz", "no run with id 'zzz'"),
        ("20", "is the start of several run ids"),
    ],
)
def test_references_naming_no_run_or_several(ref, says, two_runs):
    url, ids, _ = two_runs
    for argv in (("report", ref), ("gate", ref), ("export", ref), ("compare", ref)):
        code, _, err = _main(*argv, "--store", url)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, (argv, err)
    if ref == "20":
        assert all(i in err for i in ids)


READ_COMMANDS = [
    ("report",),
    ("report", "latest"),
    ("runs",),
    ("html", "-o", "{tmp}/r.html"),
    ("export", "latest"),
    ("compare", "latest"),
    ("gate", "latest"),
    ("plan", "--run", "latest"),
    ("history", "test-suite"),
    ("view",),
    ("run", "--resume", "latest"),
]


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: " ".join(a))
def test_read_commands_on_a_missing_store_create_nothing(argv, tmp_path):
    missing = tmp_path / "typo" / "nested" / "h.db"
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = _main(*args, "--store", f"sqlite:///{missing}")
    assert code == 2, err
    assert "no harness store here" in err and str(missing) in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "typo").exists()
    assert not (tmp_path / "r.html").exists()


def test_an_empty_database_is_not_a_store_and_stays_empty(tmp_path):
    import sqlite3

    db = tmp_path / "other.db"
    sqlite3.connect(db).close()  # an existing, empty SQLite file (someone else's)
    code, _, err = _main("report", "--store", f"sqlite:///{db}")
    assert code == 2 and "holds no harness tables" in err, err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_history_takes_a_run_reference(two_runs):
    url, _, _ = two_runs
    by_ref = json.loads(_main("history", "latest~1", "--json", "--store", url)[1])
    by_name = json.loads(_main("history", "test-suite", "--json", "--store", url)[1])
    assert by_ref == by_name and len(by_name["runs"]) == 2
