"""Per-phase networks in real runs (`harness run` on Docker, issue 25 point 1), against two
HTTP servers on Docker's bridge, A and B. A task graded in place whose agent has no network
and whose grading may reach A: the agent reaches neither, the grader A and not B. A
multi-step task whose first step may reach A only and whose second B only: each step's
agent (and its grader, on the step's network) reaches its own host and not the other. The
oracle passes both, noop fails both, each trial row records every phase's policy, and no
network of the run is left."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from docker_helpers import BASE_IMAGE, http_server

from tests.conftest import run_cli

pytestmark = [pytest.mark.docker]

PROBE = """import sys, urllib.request
def reaches(ip):
    try:
        return urllib.request.urlopen(f"http://{ip}:8000/", timeout=3).status == 200
    except OSError:
        return False
print(" ".join(f"{n}:{'yes' if reaches(ip) else 'no'}" for n, ip in zip("AB", sys.argv[1:])))
"""
"""Prints which of the servers given (A's address, B's) the sandbox reaches: ``A:yes B:no``."""


def _check(seen_by_agent: str, file: str, want: str) -> str:
    """A test.sh: the agent's record in ``file`` says ``seen_by_agent``, and the grader
    itself (on its phase's network) sees ``want``."""
    return (
        f'[ "$(cat /work/{file})" = "{seen_by_agent}" ] || exit 1\n'
        f'[ "$(python3 /work/probe.py $A $B)" = "{want}" ]\n'
    )


def _suite(tmp: Path, a: str, b: str) -> Path:
    env = tmp / "environments" / "phasenet"
    (env / "files").mkdir(parents=True)
    (env / "files" / "probe.py").write_text(PROBE)
    (env / "environment.yaml").write_text(
        yaml.safe_dump(
            {"name": "phasenet", "image": {"ref": BASE_IMAGE}, "workdir": "/work", "files": "files"}
        )
    )
    for name, script in {
        "grader-host": _check("A:no B:no", "agent.txt", "A:yes B:no"),
        "one": _check("A:yes B:no", "one.txt", "A:yes B:no"),
        "two": _check("A:no B:yes", "two.txt", "A:no B:yes"),
    }.items():
        (tmp / "hidden" / name).mkdir(parents=True)
        (tmp / "hidden" / name / "test.sh").write_text(f"A={a}; B={b}\n" + script)
    probe = f"python3 probe.py {a} {b} > "
    grader = [{"type": "tests_script", "command": 'bash "$HIDDEN_DIR/test.sh"', "timeout_s": 60}]
    tasks = [
        {
            "id": "phase/grader-host",
            "instruction": "Record what you reach.",
            "environment": "phasenet",
            "grade_in_place": "the tests check the network they are graded on",
            "grading": {"network": [a]},
            "hidden": "hidden/grader-host",
            "solution": {"commands": [probe + "agent.txt"]},
            "graders": grader,
        },
        {
            "id": "phase/steps",
            "instruction": "Record what you reach, step by step.",
            "environment": "phasenet",
            "grade_in_place": "each step is graded in the sandbox the next goes on in",
            "steps": [
                {
                    "name": name,
                    "instruction": f"Step {name}.",
                    "network": [host],
                    "hidden": f"hidden/{name}",
                    "solution": {"commands": [probe + f"{name}.txt"]},
                    "min_reward": 1.0,
                }
                for name, host in (("one", a), ("two", b))
            ],
            "graders": grader,
        },
    ]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    suite = {
        "name": "phasenet",
        "tasks": ["tasks.yaml"],
        "environments_dir": "environments",
        "sandbox": "docker",
        "trials": 1,
        "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def test_each_phase_reaches_only_its_own_host(tmp_path: Path, docker_client, test_label) -> None:
    servers = [http_server(docker_client, test_label) for _ in range(2)]
    try:
        a, b = (s.attrs["NetworkSettings"]["IPAddress"] for s in servers)
        store = tmp_path / "h.db"
        run = run_cli("run", str(_suite(tmp_path, a, b)), "--store", f"sqlite:///{store}", "-q")
    finally:
        for server in servers:
            server.remove(force=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute(
        "select arm, task_id, status, reason, evidence from trials"
    )
    got = {(arm, task): (status, reason, json.loads(ev)) for arm, task, status, reason, ev in rows}
    assert {key: status for key, (status, _, _) in got.items()} == {
        ("oracle", "phase/grader-host"): "passed",
        ("oracle", "phase/steps"): "passed",
        ("noop", "phase/grader-host"): "failed",
        ("noop", "phase/steps"): "failed",
    }, got
    assert all(ev["failure"] is None for _, _, ev in got.values()), got
    assert got[("oracle", "phase/grader-host")][2]["network"] == {
        "agent": "none",
        "grading": f"allowlist: {a}",
    }
    assert got[("oracle", "phase/steps")][2]["network"] == {
        "agent": "none",
        "grading": "none",
        "agent: step one": f"allowlist: {a}",
        "grading: step one": f"allowlist: {a}",
        "agent: step two": f"allowlist: {b}",
        "grading: step two": f"allowlist: {b}",
    }
    assert [s["reward"] for s in got[("oracle", "phase/steps")][2]["steps"]] == [1.0, 1.0]
    assert not docker_client.networks.list(names=["harness-allow-phasenet"])
