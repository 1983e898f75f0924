"""The grading red team: every attack of ``grading_attacks.py`` (an arm each) against the
shipped ``shell``, ``retail`` and Harbor tasks and the red team's own, in ONE `harness run` per
isolated backend, through the real CLI. Zero wrong verdicts (no attack passes a task, no
trial is a harness, grader or infrastructure error, every trial took one attempt), the
oracle passes everything, the run exits 0, and nothing is left behind.

The table of (attack × task → verdict, reason, attempts) is appended to ``$RED_TEAM_TABLE``
when set.
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

from tests.conftest import REPO, require_docker, run_cli
from tests.integrity.grading_attacks import PROBES
from tests.integrity.test_bwrap_sandbox import require_bwrap

HERE = Path(__file__).resolve().parent
SHELL = ("shell/config-port", "shell/fix-mean", "shell/json-retries", "shell/backup-script")
RETAIL = ("retail/refuse-cancel-delivered-w1003",)
OWN = ("ri-tests", "ri-state")
HARBOR = (
    "harbor/count-errors",
    "harbor/set-port",
    "harbor/sum-invoices",
    "harbor/separate-verifier",
    "harbor/steps-separate-verifier",
)
# (attack, task) -> the failure kind a correct harness gives (else: a plain wrong result)
KINDS = {
    ("deep_state", "retail/refuse-cancel-delivered-w1003"): "broke_environment",
    ("corrupt_db", "retail/refuse-cancel-delivered-w1003"): "broke_environment",
}


def _pick(src: Path, dest: Path, ids: tuple[str, ...]) -> None:
    doc = yaml.safe_load(src.read_text())
    doc["tasks"] = [t for t in doc["tasks"] if t["id"] in ids]
    assert len(doc["tasks"]) == len(ids), (src, ids)
    dest.write_text(yaml.safe_dump(doc, sort_keys=False))


def build_suite(tmp: Path, backend: str, arms: list[dict]) -> Path:
    """One suite over the shipped and own tasks (Harbor's on Docker only: its images are
    Dockerfiles), in ``tmp``, with the given arms."""
    envs, tasks = tmp / "environments", tmp / "tasks"
    envs.mkdir()
    for src in (
        REPO / "environments/shell",
        REPO / "environments/retail",
        HERE / "environments/integrity",
    ):
        shutil.copytree(src, envs / src.name)
    shutil.copytree(REPO / "tasks/shell", tasks / "shell")
    _pick(REPO / "tasks/shell/tasks.yaml", tasks / "shell/tasks.yaml", SHELL)
    (tasks / "retail").mkdir()
    _pick(REPO / "tasks/retail/refusal.yaml", tasks / "retail/refusal.yaml", RETAIL)
    (tasks / "own").mkdir()
    shutil.copytree(HERE / "hidden", tasks / "own/hidden")
    _pick(HERE / "tasks.yaml", tasks / "own/tasks.yaml", OWN)
    files = ["shell/tasks.yaml", "retail/refusal.yaml", "own/tasks.yaml"]
    if backend == "docker":
        out = tmp / "harbor"
        done = run_cli("import", "harbor", str(REPO / "tasks/harbor-examples"), "--out", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        for env in (out / "environments").iterdir():
            shutil.copytree(env, envs / env.name)
        shutil.copytree(out / "tasks/harbor", tasks / "harbor")
        files.append("harbor/tasks.yaml")
    suite = {
        "name": f"grading-red-team-{backend}",
        "tasks": [str(tasks / f) for f in files],
        "environments_dir": str(envs),
        "sandbox": backend,
        "sandbox_options": {"base_dir": str(tmp / "trials")} if backend == "bwrap" else {},
        "concurrency": 8,
        "trials": 1,
        "arms": arms,
        "budgets": {"timeout_s": 60},
        "limits": {"memory": "512m", "pids": 128, "cpus": 1.0},
        "retries": {"max_attempts": 2, "backoff_s": 0.1},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def attack_arms(tmp: Path, probes=PROBES) -> list[dict]:
    """The oracle and an arm per attack; the attacks' module is copied beside the suite (the
    agent jail shows an agent its module's folder, and ``tests/`` holds task files)."""
    shutil.copy(Path(__file__).parent / "grading_attacks.py", tmp / "grading_attacks.py")
    return [{"name": "oracle", "agent": "oracle"}] + [
        {"name": p, "agent": "grading_attacks:Attack", "params": {"probe": p}} for p in probes
    ]


def run_red_team(tmp: Path, backend: str, probes=PROBES) -> tuple[list[str], list[tuple]]:
    """(wrong verdicts, table rows) of one run of every attack against every task."""
    (tmp / "trials").mkdir()
    db = tmp / "r.db"
    suite = build_suite(tmp, backend, attack_arms(tmp, probes))
    result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=1200)
    wrong = []
    if result.returncode != 0 or "Traceback" in result.stderr:
        wrong.append(f"run exited {result.returncode}: {result.stderr[-1500:]}")
    rows: list[tuple] = []
    if db.exists():
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT arm, task_id, status, failure_kind, reason, evidence, attempts, "
                "(SELECT id FROM runs) FROM trials ORDER BY arm, task_id"
            ).fetchall()
    table = []
    for arm, task, status, kind, reason, evidence, attempts, _run in rows:
        failure = json.loads(evidence or "{}").get("failure") or ""
        want = "passed" if arm == "oracle" else "failed"
        table.append(
            (backend, arm, task, status, kind or "", (failure or reason or "")[:90], attempts)
        )
        if status != want or attempts != 1:
            wrong.append(
                f"{arm} × {task}: {status} after {attempts} attempts ({(reason or '')[:300]})"
            )
        elif KINDS.get((arm, task), kind) != kind:
            wrong.append(f"{arm} × {task}: failure kind {kind!r}, want {KINDS[(arm, task)]}")
    if rows:
        run_id = rows[0][-1]
        if backend == "docker":
            left = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label=harness.run={run_id}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            if left:
                wrong.append(f"containers left: {left}")
    left_dirs = list((tmp / "trials").iterdir())
    if left_dirs:
        wrong.append(f"trial directories left: {left_dirs}")
    _write_table(table)
    return wrong, table


def _write_table(table: list[tuple]) -> None:
    out = os.environ.get("RED_TEAM_TABLE")
    if out:
        with open(out, "a") as fh:
            for row in table:
                fh.write("\t".join(str(c) for c in row) + "\n")


def test_grading_red_team_on_bwrap(tmp_path):
    require_bwrap()
    wrong, table = run_red_team(tmp_path, "bwrap")
    assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)
    assert len(table) == (len(PROBES) + 1) * (len(SHELL) + len(RETAIL) + len(OWN))


@pytest.mark.usefixtures("docker_ready")
def test_grading_red_team_on_docker(tmp_path):
    require_docker()
    wrong, table = run_red_team(tmp_path, "docker")
    assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)
    n_tasks = len(SHELL) + len(RETAIL) + len(OWN) + len(HARBOR)
    assert len(table) == (len(PROBES) + 1) * n_tasks
