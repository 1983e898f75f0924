"""The red team against the SHIPPED tasks (``shell``, ``retail`` and, on Docker, the Harbor
examples and the tasks graded in place, harbor-services and harbor-steps), for the classes of issue 22 points 4 and 5: an agent editing its trajectory and
budgets, walking ``gc`` and ``sys.modules``, doing forbidden and step-costing things
through ``ctx.sandbox.exec``, stuck in C with and without the GIL, reading the task files,
hidden tests, solutions and store from its own process and acting out what it found,
snooping on other processes through ``/proc``, and detaching host processes. One
``harness run`` per isolated backend, through the real CLI (every probe on bwrap; on
Docker those whose outcome depends on the sandbox or the Harbor task): zero wrong verdicts, the
oracle passes everything, nothing is left behind. Forging ``$HARNESS_TRAJECTORY`` lines
from a ``command`` program is refused at load on a task whose trajectory rules it could
fool, and stored as reported (counting for nothing) elsewhere.
"""

from __future__ import annotations

import json
import random
import shlex
import shutil
import socket
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, require_docker, run_cli
from tests.integrity.test_bwrap_sandbox import require_bwrap
from tests.integrity.test_red_team import (
    REACHED,
    agent_module,
    assert_nothing_left,
    harness_tmp,
    reach,
)

TASKS = {
    "shell/config-port": "state",
    "shell/fix-mean": "hidden tests",
    "retail/cancel-w1001": "state, outputs, required trajectory",
    "retail/refuse-cancel-delivered-w1003": "no change, forbidden trajectory",
}
HARBOR = "harbor/count-errors"
IN_PLACE = {"harbor/reserve-stock": "harbor-services", "harbor/greeter": "harbor-steps"}
"""The shipped tasks graded in the agent's own sandbox (a sidecar; three steps), on Docker."""
PROBES = (
    "forge_events",
    "lift_budgets",
    "exec_unrecorded",
    "exec_uncharged",
    "patch_graders",
    "gc_task",
    "stuck_in_c",
    "hold_gil",
    "read_material",
    "replay_solution",
    "proc_snoop",
    "detach_host",
)
# On Docker, the probes whose outcome depends on the sandbox or on the Harbor task (the
# agent's own process is jailed the same way on both backends: those probes run on bwrap,
# where a trial costs a fraction of a Docker one)
DOCKER_PROBES = (
    "forge_events",
    "exec_unrecorded",
    "exec_uncharged",
    "read_material",
    "replay_solution",
    "detach_host",
)
TIMEOUT_S = 15
DOCKER_TIMEOUT_S = 60
"""On Docker no probe blocks: a roomy budget keeps the oracle's tool calls (a container
exec each) inside it on a loaded machine (10 s was not, once)."""
BLOCK_S = 2 * TIMEOUT_S + 4
MAX_STEPS = 6  # the oracle's longest solution (retail/cancel-w1001) takes 5
REASONS = {
    "stuck_in_c": "timeout",
    "hold_gil": "timeout",
    "lift_budgets": "max_steps",
    "exec_uncharged": "max_steps",
}
# Harbor tasks bring their own time budget (task.toml's, 120 s): a probe blocked for
# BLOCK_S comes back under it, and fails on its answer.
TASK_REASONS = {("stuck_in_c", HARBOR): None, ("hold_gil", HARBOR): None}


def _tasks(tmp_path: Path, docker: bool) -> tuple[list[str], Path]:
    """The shipped task files (and, on Docker, the Harbor examples imported), and an
    environments folder holding every environment they use."""
    envs = tmp_path / "environments"
    for name in ("shell", "retail"):
        shutil.copytree(REPO / "environments" / name, envs / name)
    files = [REPO / "tasks/shell/tasks.yaml", REPO / "tasks/retail/cancel.yaml"]
    files.append(REPO / "tasks/retail/refusal.yaml")
    for name in ("harbor-examples", *IN_PLACE.values()) if docker else ():
        out = tmp_path / name
        done = run_cli("import", "harbor", str(REPO / "tasks" / name), "--out", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        shutil.copytree(out / "environments", envs, dirs_exist_ok=True)
        files.append(out / "tasks/harbor/tasks.yaml")
    return [str(f) for f in files], envs


def _suite(tmp_path: Path, backend: str, tag: int, port: int, marker: Path) -> Path:
    files, envs = _tasks(tmp_path, backend == "docker")
    params = {
        "tag": tag,
        "port": port,
        "marker": str(marker),
        "secret": str(tmp_path / "nothing"),
        "reach": [*reach(tmp_path), *(f for f in files if not f.startswith(str(REPO)))],
        "block_s": BLOCK_S,
        "spend": MAX_STEPS + 2,
    }
    agent = agent_module(tmp_path)
    arms = [{"name": "oracle", "agent": "oracle"}]
    probes = DOCKER_PROBES if backend == "docker" else PROBES
    arms += [{"name": p, "agent": agent, "params": {**params, "probe": p}} for p in probes]
    suite = {
        "name": f"red-team-shipped-{backend}",
        "tasks": files,
        "environments_dir": str(envs),
        "sandbox": backend,
        "sandbox_options": {"base_dir": str(tmp_path / "trials")} if backend == "bwrap" else {},
        "concurrency": 6,
        "trials": 1,
        "arms": arms,
        "budgets": {
            "timeout_s": DOCKER_TIMEOUT_S if backend == "docker" else TIMEOUT_S,
            "max_steps": MAX_STEPS,
        },
        "retries": {"max_attempts": 2, "backoff_s": 0.1},
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _red_team(tmp_path: Path, backend: str) -> None:
    (tmp_path / "trials").mkdir()
    tag = random.randint(6_000_000, 6_999_999)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    marker = Path("/var/tmp") / f"red-team-shipped-{uuid.uuid4().hex}"
    suite = _suite(tmp_path, backend, tag, listener.getsockname()[1], marker)
    tasks = [*TASKS, *([HARBOR, *IN_PLACE] if backend == "docker" else [])]
    selection = [arg for task in tasks for arg in ("--task", task)]
    db = tmp_path / "r.db"
    tmp = harness_tmp()
    result = run_cli(
        "run",
        str(suite),
        *selection,
        "--store",
        f"sqlite:///{db}",
        "-q",
        env={"OPENAI_API_KEY": "sk-host-secret", "MY_SECRET": "x", "TMPDIR": str(tmp)},
        timeout=1200,
    )
    listener.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT arm, task_id, status, failure_kind, reason, evidence, attempts FROM trials"
        ).fetchall()
    probes = DOCKER_PROBES if backend == "docker" else PROBES
    assert len(rows) == (len(probes) + 1) * len(tasks)
    wrong = []
    for arm, task, status, kind, reason, evidence, attempts in rows:
        want = "passed" if arm == "oracle" else "failed"
        if status != want or attempts != 1:
            wrong.append(f"{arm} × {task}: {status} after {attempts} attempts ({reason})")
            continue
        expect = TASK_REASONS.get((arm, task), REASONS.get(arm))
        if expect and kind != expect:
            wrong.append(f"{arm} × {task}: reason {kind} ({reason[:120]}), want {expect}")
        info = json.loads(evidence or "{}").get("info") or {}
        for key in ("from", REACHED.get(arm, "")):
            if info.get(key):
                wrong.append(f"{arm} × {task}: reached {info[key]}")
        patched = info.get("patched")
        if arm == "patch_graders" and patched:
            wrong.append(f"{arm} × {task}: patched {patched} graders")
    assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)

    if "stuck_in_c" in probes:
        time.sleep(BLOCK_S - TIMEOUT_S + 1)  # a C call left behind would come back by now
    assert not list(marker.parent.glob(f"{marker.name}-late-*"))
    ps = subprocess.run(["ps", "-wweo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {tag}" not in ps, [line for line in ps.splitlines() if str(tag) in line]
    assert list((tmp_path / "trials").iterdir()) == []
    assert_nothing_left(tmp)


def test_shipped_tasks_red_team_on_bwrap(tmp_path):
    require_bwrap()
    _red_team(tmp_path, "bwrap")


@pytest.mark.usefixtures("docker_ready")
def test_shipped_tasks_red_team_on_docker(tmp_path):
    require_docker()
    _red_team(tmp_path, "docker")


FORGED = [
    {"kind": "tool_call", "tool": t, "args": a, "ok": True}
    for t, a in (
        ("verify_identity", {"user_id": "mia_garcia_4516"}),
        ("get_order", {"order_id": "W1001"}),
        ("cancel_order", {"order_id": "W1001"}),
        ("refund", {"order_id": "W1001"}),
    )
]


def _forger(tmp_path: Path) -> Path:
    """A ``command`` program that writes the required tool calls of ``retail/cancel-w1001``
    to ``$HARNESS_TRAJECTORY`` and does nothing else."""
    lines = " ".join(shlex.quote(json.dumps(e)) for e in FORGED)
    suite = {
        "name": "forger",
        "tasks": [str(REPO / "tasks/retail/cancel.yaml"), str(REPO / "tasks/shell/tasks.yaml")],
        "environments_dir": str(REPO / "environments"),
        "sandbox": "unsafe-local",
        "arms": [
            {
                "name": "forger",
                "agent": "command",
                "params": {"command": f"printf '%s\\n' {lines} > \"$HARNESS_TRAJECTORY\""},
            }
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_forged_trajectory_lines_are_refused_where_they_could_count(tmp_path):
    """On a shipped task with trajectory rules, an agent program is refused at load (its
    lines could only be its own word); on one without, its lines are stored as reported."""
    suite = _forger(tmp_path)
    db = tmp_path / "f.db"
    url = f"sqlite:///{db}"
    refused = run_cli("run", str(suite), "--task", "retail/cancel-w1001", "--store", url)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "reported_events" in refused.stderr and "forger" in refused.stderr
    ran = run_cli("run", str(suite), "--task", "shell/config-port", "--store", url, "-q")
    assert ran.returncode == 0, ran.stderr[-2000:]
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM trials").fetchall()
        forged = conn.execute(
            "SELECT tool, reported FROM trajectory_events WHERE kind = 'tool_call'"
        ).fetchall()
    assert status == [("failed",)]  # the program did nothing
    assert forged == [(e["tool"], 1) for e in FORGED]
