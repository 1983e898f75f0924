"""The red team against the shipped tasks graded IN PLACE (issue 22, points 1 and 11):
``harbor/reserve-stock`` (tests/harbor-services: its verifier talks to a sidecar) and
``harbor/greeter`` (tasks/harbor-steps: three steps in one sandbox, each graded there). Every
attack of ``in_place_attacks.py`` (an arm each) in ONE `harness run` on Docker (the tasks'
images are Dockerfiles and the sidecar a container: they do not run on bwrap), through the
real CLI. Zero wrong verdicts: no attack passes a task or gets a reward above 0 for a step it
did not do, every trial took one attempt and is no harness, grader or infrastructure error;
the oracle passes both; the run exits 0; no container, network or volume of the run is left.

The table of (attack × task → verdict, step rewards, reason) is appended to
``$RED_TEAM_TABLE`` when set.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.sandbox.product_links import UNLINK_IN_PLACE
from tests.conftest import REPO, require_docker, run_cli
from tests.integrity.in_place_attacks import PROBES

HERE = Path(__file__).resolve().parent
TASKS = ("harbor/reserve-stock", "harbor/greeter")
HONEST = {
    "outlive_sweep": 1,
    "plant_tests": 1,
    "root_exec": 1,
    "fake_service": 1,
    "readme_link": 2,
    "pid_flood": 1,
}
"""Attacks that do greeter's first steps honestly (how many): the later steps must score 0."""


def _suite(tmp: Path) -> Path:
    envs, files = tmp / "environments", []
    envs.mkdir()
    for name in ("harbor-services", "harbor-steps"):
        out = tmp / name
        done = run_cli("import", "harbor", str(REPO / "tasks" / name), "--out", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        for env in (out / "environments").iterdir():
            shutil.copytree(env, envs / env.name)
        files.append(str(out / "tasks/harbor/tasks.yaml"))
    package = tmp / "in_place_red_team"  # the attacks and the ones they reuse
    package.mkdir()
    for module in ("in_place_attacks.py", "grading_attacks.py"):
        shutil.copy(HERE / module, package / module)
    (package / "__init__.py").write_text("")
    arms = [{"name": "oracle", "agent": "oracle"}] + [
        {
            "name": p,
            "agent": "in_place_red_team.in_place_attacks:InPlaceAttack",
            "params": {"probe": p},
        }
        for p in PROBES
    ]
    suite = {
        "name": "red-team-in-place",
        "tasks": files,
        "environments_dir": str(envs),
        "sandbox": "docker",
        "concurrency": 4,
        "trials": 1,
        "arms": arms,
        "limits": {"memory": "512m", "pids": 128, "cpus": 1.0},
        "retries": {"max_attempts": 2, "backoff_s": 0.1},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def _wrong(arm: str, task: str, status: str, attempts: int, kind: str | None, ev: dict) -> list:
    want = "passed" if arm == "oracle" else "failed"
    name = f"{arm} × {task}"
    if status != want or attempts != 1:
        return [f"{name}: {status} after {attempts} attempts ({ev.get('failure') or ''})"]
    if kind in ("harness_error", "grader_error", "infra_error"):
        return [f"{name}: {kind}"]
    steps = ev.get("steps") or []
    if task == "harbor/greeter" and arm != "oracle":
        # a step it did not do gets nothing (the first, done honestly, may pass)
        done = HONEST.get(arm, 0)
        got = [(s["name"], s.get("reward")) for s in steps[done:] if s.get("reward")]
        if got:
            return [f"{name}: rewarded for steps it did not do: {got}"]
    return []


def _left(run_id: str) -> list[str]:
    found = []
    for kind in ("ps -a", "network ls", "volume ls"):
        out = subprocess.run(
            ["docker", *kind.split(), "-q", "--filter", f"label=harness.run={run_id}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        found += [f"{kind.split()[0]} {x}" for x in out]
    return found


@pytest.mark.usefixtures("docker_ready")
def test_in_place_tasks_red_team_on_docker(tmp_path):
    require_docker()
    db = tmp_path / "r.db"
    suite = _suite(tmp_path)
    result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=1500)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT arm, task_id, status, failure_kind, evidence, attempts, "
            "(SELECT id FROM runs) FROM trials ORDER BY arm, task_id"
        ).fetchall()
    wrong, table = [], []
    for arm, task, status, kind, evidence, attempts, _ in rows:
        ev = json.loads(evidence or "{}")
        wrong += _wrong(arm, task, status, attempts, kind, ev)
        rewards = [s.get("reward") for s in ev.get("steps") or []]
        table.append(("docker", arm, task, status, kind or "", rewards, attempts))
    if rows:
        wrong += _left(rows[0][-1])
    out = os.environ.get("RED_TEAM_TABLE")
    if out:
        with open(out, "a") as fh:
            fh.writelines("\t".join(str(c) for c in row) + "\n" for row in table)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(rows) == (len(PROBES) + 1) * len(TASKS)
    assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)


@pytest.mark.usefixtures("docker_ready")
def test_a_verifiers_leftover_root_process_is_not_the_agents_fault(tmp_path):
    """A step's verifier (root) that leaves a process behind: the next step's sweep kills it
    (as root) and the oracle still passes every step, where the agent's user alone could
    not (the trial failed as agent_error: commands run as 1000:1000, not as '0')."""
    require_docker()
    src = tmp_path / "src"
    shutil.copytree(REPO / "tasks/harbor-steps", src)
    test = src / "greeter/steps/scaffold/tests/test.sh"
    lines = test.read_text().splitlines()
    lines.insert(2, "(setsid sleep 300 &) >/dev/null 2>&1  # left behind, as root")
    test.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert run_cli("import", "harbor", str(src), "--out", str(out)).returncode == 0
    suite = out / "tasks/harbor/suite.yaml"
    doc = yaml.safe_load(suite.read_text())
    doc["arms"] = [{"name": "oracle", "agent": "oracle"}]
    suite.write_text(yaml.safe_dump(doc))
    db = tmp_path / "r.db"
    result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, reason, (SELECT id FROM runs) FROM trials").fetchall()
    assert [r[0] for r in rows] == ["passed"], rows
    assert _left(rows[0][2]) == []


@pytest.mark.usefixtures("docker_ready")
def test_links_into_the_graders_places_are_removed_in_place():
    """``UNLINK_IN_PLACE`` (run before a task graded in place is graded) removes, in the work
    dir and the places the agent's user may write, every link that resolves into
    ``/opt/harness``, ``/tests`` or ``/logs``, however it gets there, and nothing else."""
    require_docker()
    setup = (
        "cd /work && ln -s /tests/test.sh readme && ln -s / root && ln -s root/logs/x via_root "
        "&& ln -s /work here && ln -s here/../opt/harness/hidden dots && ln -s /usr/bin/python3 py "
        "&& ln -s ../work/here keep && ln -s /logs/verifier/reward.txt /tmp/r && mkdir -p sub "
        "&& ln -s ../../tests sub/up"
    )
    script = f"{setup} && {UNLINK_IN_PLACE} && cd /work && ls -A . sub /tmp | tr '\\n' ' '"
    done = subprocess.run(
        ["docker", "run", "--rm", "--user", "1000:1000", "-e", "HARNESS_WORKDIR=/work",
         "--label", "harness.test=unlink-in-place", "harness-base:latest", "bash", "-c", script],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    left = set(done.stdout.replace(":", " ").split()) - {".", "sub", "/tmp"}
    assert left == {"root", "here", "py", "keep"}, done.stdout
