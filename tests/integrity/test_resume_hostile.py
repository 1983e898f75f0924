"""``--resume`` of a run that still has trials to run, over stored rows with hostile content
(issue 22, point 7): file names that are not UTF-8, an answer with a lone surrogate, a message
with lone surrogates and NUL, a command printing NUL, invalid UTF-8 and 24 MiB of noise, and
a last line of such bytes as its answer.

The first run (sqlite store, bwrap) stores every hostile trial while a ``gate`` arm's trials
wait on a file; it is then interrupted (SIGINT twice: exit 4, the gate's trials aborted,
without a row).
The file is made and the run resumed: it exits 0 without a traceback, the gate's trials get
their rows, and every row and event stored before the resume is byte for byte the same.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

from harness import exitcodes
from tests.conftest import REPO, run_cli
from tests.integrity.test_bwrap_sandbox import require_bwrap

HERE = Path(__file__).resolve().parent
TASKS = ("shell/config-port", "shell/fix-mean")
TEXT_PROBES = ("bad_name", "surrogate_answer", "surrogate_say")
BAD = r"printf 'nul\0 bad\377\376 cesu\355\240\200 end\n'"
COMMANDS = {
    "noise": f"{BAD}; head -c {24 << 20} /dev/urandom; echo; {BAD} >&2; echo noise-done",
    "bad_answer": f"{BAD}; printf 'caf\\351 \\0 \\355\\240\\200\\n'",
}
GATE = '''"""Waits until the file ``open`` exists beside it (the test makes it before resuming)."""
import asyncio
from pathlib import Path

from harness.agents.base import Agent, AgentContext, AgentResult


class Gate(Agent):
    name = "gate"

    async def run(self, ctx: AgentContext) -> AgentResult:
        while not Path(__file__).with_name("open").exists():
            await asyncio.sleep(0.1)
        return AgentResult(answer="through")
'''


def _suite(tmp: Path) -> tuple[Path, Path]:
    """The suite, and the gate's file (absent: the gate's trials wait)."""
    package = tmp / "resume_probes"  # the jail shows a package's directory as it changes
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(HERE / "limits_probes.py", package / "limits_probes.py")
    (package / "gate.py").write_text(GATE)
    arms = [{"name": "gate", "agent": "resume_probes.gate:Gate"}]
    arms += [
        {"name": p, "agent": "resume_probes.limits_probes:TextProbe", "params": {"probe": p}}
        for p in TEXT_PROBES
    ]
    arms += [
        {"name": n, "agent": "command", "params": {"command": c, "where": "sandbox"}}
        for n, c in COMMANDS.items()
    ]
    (tmp / "trials").mkdir()
    suite = {
        "name": "resume-hostile",
        "tasks": [str(REPO / "tasks/shell/tasks.yaml")],
        "environments_dir": str(REPO / "environments"),
        "sandbox": "bwrap",
        "sandbox_options": {"base_dir": str(tmp / "trials")},
        "concurrency": 4,
        "trials": 1,
        "arms": arms,
        "budgets": {"timeout_s": 600},
        "retries": {"max_attempts": 1},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path, package / "open"


KEYS = {"trials": "id", "trajectory_events": "id", "attempts": "id", "blobs": "sha256"}


def _snapshot(db: Path) -> dict[str, dict]:
    """Every row of the tables a trial writes, by key, as stored (text read back as bytes)."""
    with sqlite3.connect(db) as conn:
        conn.text_factory = bytes
        return {
            table: {row[0]: row for row in conn.execute(f"SELECT {key}, * FROM {table}")}
            for table, key in KEYS.items()
        }


def _hostile_rows(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM trials WHERE arm != 'gate'").fetchone()[0]
    except sqlite3.OperationalError:  # not made yet
        return 0


def _first_run(suite: Path, db: Path) -> subprocess.CompletedProcess:
    """Run until every hostile trial is stored, then interrupt it (the gate's still wait)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    selection = [a for t in TASKS for a in ("--task", t)]
    cmd = [sys.executable, "-m", "harness.cli", "run", str(suite), *selection]
    proc = subprocess.Popen(
        [*cmd, "--store", f"sqlite:///{db}", "-q"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="backslashreplace",
    )
    want = len(TASKS) * (len(TEXT_PROBES) + len(COMMANDS))
    deadline = time.monotonic() + 600
    while _hostile_rows(db) < want and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # the first lets trials in flight finish: the gate's
    time.sleep(1)  # never would, so a second aborts them
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_resume_with_trials_left_over_hostile_rows(tmp_path):
    require_bwrap()
    suite, door = _suite(tmp_path)
    db = tmp_path / "r.db"
    first = _first_run(suite, db)
    assert first.returncode == exitcodes.INTERRUPTED, first.stderr[-3000:]
    assert "Traceback" not in first.stderr, first.stderr[-3000:]
    before = _snapshot(db)
    arms = {row[0] for row in _arms(db)}
    assert "gate" not in arms and len(before["trials"]) == len(TASKS) * 5, arms
    events = b"".join(
        c for r in before["trajectory_events"].values() for c in r if type(c) is bytes
    )
    for stored in (rb"\udcff\ud800 \u0000", rb"\xff\xfe.conf", rb"cesu\\xed\\xa0"):
        assert stored in events, stored  # the hostile text is there, stored escaped
    assert re.search(rb'"output_dropped": \d{8}', events)  # the noise, cut to head and tail
    with sqlite3.connect(db) as conn:
        run_id = conn.execute("SELECT id FROM runs").fetchone()[0]

    door.write_text("")
    resumed = run_cli("run", "--resume", run_id, "--store", f"sqlite:///{db}", "-q", timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Traceback" not in resumed.stderr, resumed.stderr[-3000:]
    after = _snapshot(db)
    rows = _arms(db)
    assert sorted(r for r in rows if r[0] == "gate") == [("gate", t, "failed") for t in TASKS]
    assert len(rows) == len(TASKS) * 6
    for table, old in before.items():
        changed = [key for key, row in old.items() if after[table].get(key) != row]
        assert not changed, f"{table}: rows changed or gone after the resume: {changed}"
    with sqlite3.connect(db) as conn:
        answers = conn.execute("SELECT answer FROM trials WHERE arm = 'gate'").fetchall()
    assert answers == [("through",)] * len(TASKS)  # the gate's trials ran, after the resume
    for args in (("report", run_id), ("export", run_id, "-o", str(tmp_path / "e.jsonl"))):
        done = run_cli(*args, "--store", f"sqlite:///{db}")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert list((tmp_path / "trials").iterdir()) == []


def _arms(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT arm, task_id, status FROM trials").fetchall()
