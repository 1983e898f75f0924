"""The red-team suite: every hostile agent of ``hostile.py`` (an arm each, in-process style,
in C, and shell-level) against a task of every grader type, in ONE `harness run` per isolated backend
(Docker and bubblewrap), through the real CLI. Zero wrong verdicts: no probe passes any
task, each failure carries the reason a correct harness gives, the oracle arm still passes
everything (nothing a probe did to objects it held changed another arm's verdicts), the run
exits 0 (no infrastructure error, no crash, a probe's SystemExit did not set the exit
code), and nothing is left: no process, container, network, trial directory or cgroup.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from harness.sandbox.trial_dirs import _owner_dead
from tests.conftest import REPO, require_docker, run_cli
from tests.integrity.canary import Canary
from tests.integrity.hostile import PROBES
from tests.integrity.test_bwrap_sandbox import require_bwrap

HERE = Path(__file__).resolve().parent
TASKS = ("ri-answer", "ri-state", "ri-tests", "ri-trajectory", "ri-forbidden")

# probe -> the failure reason every one of its trials must carry (None: a plain wrong result)
REASONS = {
    "block_loop": "timeout",
    "ignore_cancel": "timeout",
    "spin": "timeout",
    "return_str": "invalid_agent_result",
    "return_none": "invalid_agent_result",
    "answer_int": "invalid_agent_result",
    "answer_dict": "invalid_agent_result",
    "confidence_str": "invalid_agent_result",
    "confidence_nan": "invalid_agent_result",
    "info_not_json": "invalid_agent_result",
    "system_exit": "agent_error",
    "keyboard_interrupt": "agent_error",
    "raise_error": "agent_error",
    "missing_file": "agent_error",
    "raise_infra": "agent_error",
    "stuck_in_c": "timeout",
    "hold_gil": "timeout",
}
# On Docker the agent runs as uid 1000 and may not run commands as another user.
BACKEND_REASONS = {
    ("docker", "kill_all"): "killed_own_sandbox",
    ("docker", "root_detached"): "agent_error",
}
# (probe, task) -> reason, where only that task's budget stops the probe
TASK_REASONS = {
    ("lift_budgets", "ri-forbidden"): "max_steps",
    ("exec_uncharged", "ri-forbidden"): "max_steps",
}


# Probes of the agent's own process: what they reached, which must stay empty.
REACHED = {
    "read_material": "read",
    "proc_snoop": "reached",
    "docker_socket": "reached",
    "host_network": "connected",
    "cross_trial": "found",
}


def reach(tmp_path: Path) -> list[str]:
    """Host paths no agent may read: this suite's task files, hidden tests and
    environments, the shipped tasks (solutions and Harbor tests among them), the store and
    the trials' directories."""
    paths = [HERE / "tasks.yaml", HERE / "hidden", HERE / "environments", REPO / "tasks"]
    return [str(p) for p in (*paths, tmp_path / "r.db", tmp_path / "trials")]


def agent_module(tmp_path: Path) -> str:
    """The probes as a module of their own beside the suite: the agent's jail shows it its
    module, and ``tests/`` holds the task files (the harness refuses such a jail)."""
    shutil.copy(HERE / "hostile.py", tmp_path / "hostile.py")
    return "hostile:Probe"


def harness_tmp() -> Path:
    """A temporary directory of the harness's own (``TMPDIR``: the agent jail's spool, plain
    agent homes, ...), short enough for unix socket paths; empty again after a run."""
    return Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))


def assert_nothing_left(tmp: Path) -> None:
    """No file left in the harness's temporary directory, no process naming it."""
    assert list(tmp.iterdir()) == []
    ps = subprocess.run(["ps", "-wweo", "args"], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines() if str(tmp) in line]
    tmp.rmdir()


def _suite(tmp_path: Path, backend: str, tag: int, port: int, marker: Path, secret: Path):
    params = {"tag": tag, "port": port, "marker": str(marker), "secret": str(secret)}
    params["reach"] = reach(tmp_path)
    agent = agent_module(tmp_path)
    arms = [{"name": "oracle", "agent": "oracle"}] + [
        {"name": name, "agent": agent, "params": {**params, "probe": name}} for name in PROBES
    ]
    suite = {
        "name": f"red-team-{backend}",
        "tasks": [str(HERE / "tasks.yaml")],
        "environments_dir": str(HERE / "environments"),
        "sandbox": backend,
        "sandbox_options": {"base_dir": str(tmp_path / "trials")} if backend == "bwrap" else {},
        "concurrency": 8,
        "trials": 1,
        "arms": arms,
        "budgets": {"timeout_s": 4},
        "limits": {"memory": "256m", "pids": 64, "cpus": 1.0},
        "retries": {"max_attempts": 2, "backoff_s": 0.1},
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _red_team(tmp_path: Path, backend: str, canary: Canary) -> None:
    (tmp_path / "trials").mkdir()
    tag = random.randint(7_000_000, 7_999_999)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    marker = Path("/var/tmp") / f"red-team-{uuid.uuid4().hex}"
    secret = tmp_path / "host-secret"
    secret.write_text("do-not-read")
    cgroups_before = _cgroups()
    db = tmp_path / "r.db"
    suite = _suite(tmp_path, backend, tag, port, marker, secret)
    tmp = harness_tmp()
    result = run_cli(
        "run",
        str(suite),
        "--store",
        f"sqlite:///{db}",
        "-q",
        env={
            "OPENAI_API_KEY": "sk-host-secret",
            "MY_SECRET": "x",
            "TMPDIR": str(tmp),
            **canary.env,
        },
        timeout=1200,  # a grading sandbox per state and hidden-test trial; loaded CI machines
    )
    listener.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
        rows = conn.execute(
            "SELECT arm, task_id, status, failure_kind, reason, evidence, attempts FROM trials"
        ).fetchall()
    assert len(rows) == (len(PROBES) + 1) * len(TASKS)
    # nothing of the harness's environment reached any output or the store
    canary.assert_absent(result.stdout, result.stderr, store=db)
    table = defaultdict(dict)
    wrong = []
    for arm, task, status, kind, reason, evidence, attempts in rows:
        failure = json.loads(evidence or "{}").get("failure") or ""
        table[arm][task] = (status, failure or reason)
        want = "passed" if arm == "oracle" else "failed"
        expect_reason = BACKEND_REASONS.get((backend, arm), REASONS.get(arm))
        expect_reason = TASK_REASONS.get((arm, task), expect_reason)
        if status != want or attempts != 1:
            wrong.append(f"{arm} × {task}: {status} after {attempts} attempts ({reason})")
        elif expect_reason and (kind != expect_reason or not failure.startswith(kind)):
            wrong.append(f"{arm} × {task}: reason {failure or reason!r}, want {expect_reason}")
        info = json.loads(evidence or "{}").get("info") or {}
        if info.get(REACHED.get(arm, "")):
            wrong.append(f"{arm} × {task}: reached {info[REACHED[arm]]}")
    assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)
    _write_table(backend, table)
    report = run_cli("report", run_id, "--section", "unresolved", "--store", f"sqlite:///{db}")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "failed by the agent's own fault" in report.stdout
    assert "failed: invalid_agent_result" in report.stdout

    # nothing left: no file written by a process or thread that outlived its turn (a stuck
    # probe's C call comes back 8 s after it started)
    time.sleep(9)
    assert not marker.exists()
    assert not list(marker.parent.glob(f"{marker.name}-late-*"))
    ps = subprocess.run(["ps", "-wweo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {tag}" not in ps, [line for line in ps.splitlines() if str(tag) in line]
    assert list((tmp_path / "trials").iterdir()) == []
    assert_nothing_left(tmp)
    # other runs on this machine make cgroups too: a leftover is one whose run has ended
    assert {c for c in _cgroups() - cgroups_before if _owner_dead(c)} == set()
    if backend == "docker":
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=harness.run={run_id}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert left == []


def _cgroups() -> set[str]:
    found = set()
    for root in ("/sys/fs/cgroup/harness", "/sys/fs/cgroup/pids/harness"):
        if os.path.isdir(root):
            found.update(d for d in os.listdir(root) if d.startswith("harness-"))
    return found


def _write_table(backend: str, table: dict) -> None:
    """The probe × task table, for the red-team report (RED_TEAM_TABLE=path)."""
    out = os.environ.get("RED_TEAM_TABLE")
    if not out:
        return
    with open(out, "a") as fh:
        for arm in sorted(table):
            cells = "; ".join(f"{t}: {s} {r[:60]}" for t, (s, r) in sorted(table[arm].items()))
            fh.write(f"{backend}\t{arm}\t{cells}\n")


def test_red_team_on_bwrap(tmp_path, canary):
    require_bwrap()
    _red_team(tmp_path, "bwrap", canary)


@pytest.mark.usefixtures("docker_ready")
def test_red_team_on_docker(tmp_path, canary):
    require_docker()
    _red_team(tmp_path, "docker", canary)


def test_the_suite_has_enough_probes():
    assert len(PROBES) >= 25
    assert REPO.is_dir()
