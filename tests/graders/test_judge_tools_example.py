"""The shipped example of a judge that explores the work dir (examples/judged-workspace/),
run as its suite file says: the stand-in judge script serves, `harness run` grades the
oracle's result.txt right and the noop's empty work dir wrong, three judge calls a trial."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.conftest import REPO, run_cli, wait_for

EXAMPLE = REPO / "examples" / "judged-workspace"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def test_the_example_runs_against_its_stand_in_judge(tmp_path: Path) -> None:
    port = _free_port()
    judge = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "exploring_judge.py"), str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: _answers(f"http://127.0.0.1:{port}/v1/models"), timeout=20)
        db = tmp_path / "s.db"
        done = run_cli(
            "run", str(EXAMPLE / "suite.yaml"), "--store", f"sqlite:///{db}", "-q",
            env={"JUDGE_BASE_URL": f"http://127.0.0.1:{port}/v1"},
        )  # fmt: skip
    finally:
        judge.terminate()
        judge.wait(timeout=10)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute("select arm, status, judge_calls, reason from trials")
    got: dict[str, list[tuple[str, int, str]]] = {}
    for arm, status, calls, reason in rows:
        got.setdefault(arm, []).append((status, calls, reason))
    assert len(got["oracle"]) == len(got["noop"]) == 16
    assert all(s == "passed" and c == 3 for s, c, _ in got["oracle"])
    assert all(s == "failed" and c == 3 for s, c, _ in got["noop"])
    assert all("error: result.txt: no such file" in r for _, _, r in got["noop"])
