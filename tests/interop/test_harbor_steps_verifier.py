"""Harbor multi-step tasks with a separate verifier (issue 25, point 3): each step is graded in
a fresh grading sandbox from the verifier's image, given only the artifacts, while the
agent's sandbox lives on to the next step; a step with Harbor's shared verifier is graded in
the agent's sandbox. The import writes each step's grading; the shipped task runs on Docker:
the oracle passes both steps, noop fails the first (its ``min_reward`` stops the trial), and
an agent that forges the reward in its own sandbox gets 0."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from harness.config.loader import load_suite
from harness.importers.harbor import import_harbor
from tests.conftest import REPO, run_cli

TASK = REPO / "tasks" / "harbor-examples" / "steps-separate-verifier"
VERIFIER = "harbor-steps-separate-verifier-verifier"


def _written(out: Path) -> dict:
    (task,) = yaml.safe_load((out / "tasks" / "harbor" / "tasks.yaml").read_text())["tasks"]
    return task


def test_each_step_gets_the_verifiers_sandbox_and_its_artifacts(tmp_path: Path) -> None:
    done = import_harbor(TASK, tmp_path)
    assert done.imported == ["steps-separate-verifier"], done.refused
    task = _written(tmp_path)
    assert "grade_in_place" not in task
    assert task["grading"] == {"environment": VERIFIER, "files": ["/logs/artifacts"]}
    for step in task["steps"]:
        assert step["grading"] == {
            "environment": VERIFIER,
            "files": ["/app/counts.txt", "/logs/artifacts"],
        }
    loaded = load_suite(tmp_path / "tasks" / "harbor" / "suite.yaml").task(task["id"])
    assert [s.grading and s.grading.environment for s in loaded.task.steps] == [VERIFIER] * 2


def _mixed(tmp: Path, top: str, second: str) -> Path:
    """A two-step task: the task's verifier mode ``top``; the second step's ``second``."""
    task = tmp / "mixed"
    for d in ("environment", "tests", "steps/one", "steps/two/tests"):
        (task / d).mkdir(parents=True, exist_ok=True)
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:bookworm-1\nWORKDIR /app\n")
    (task / "tests" / "Dockerfile").write_text("FROM harness-base:bookworm-1\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "steps" / "two" / "tests" / "Dockerfile").write_text("FROM harness-base:bookworm-1\n")
    for step in ("one", "two"):
        (task / "steps" / step / "instruction.md").write_text(f"do {step}")
    (task / "task.toml").write_text(
        'artifacts = ["/app/a.txt"]\n[environment]\nnetwork_mode = "no-network"\n'
        f'[verifier]\nenvironment_mode = "{top}"\n'
        '[[steps]]\nname = "one"\n'
        '[[steps]]\nname = "two"\nartifacts = ["/tmp/b.txt"]\n'
        f'[steps.verifier]\nenvironment_mode = "{second}"\n'
        '[steps.verifier.environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["10.9.0.1"]\n'
        'workdir = "/workspace"\n'
    )
    return task


def test_a_step_may_grade_otherwise_than_its_task(tmp_path: Path) -> None:
    """A shared step in a task whose verifier is separate is graded in place; a separate
    step in a task graded in place gets its own verifier (its tests/Dockerfile, work dir,
    network, the task's and its own artifacts)."""
    import_harbor(_mixed(tmp_path, "separate", "shared"), tmp_path / "a")
    one, two = _written(tmp_path / "a")["steps"]
    assert one["grading"]["environment"] == "harbor-mixed-verifier"
    assert "grade_in_place" in two and "grading" not in two

    import_harbor(_mixed(tmp_path, "shared", "separate"), tmp_path / "b")
    task = _written(tmp_path / "b")
    one, two = task["steps"]
    assert "grade_in_place" in task and "grading" not in one
    assert two["grading"] == {
        "network": ["10.9.0.1"],
        "root": True,
        "environment": "harbor-mixed-two-verifier",
        "files": ["/app/a.txt", "/tmp/b.txt", "/logs/artifacts"],
    }
    env = tmp_path / "b" / "environments" / "harbor-mixed-two-verifier"
    assert yaml.safe_load((env / "environment.yaml").read_text())["workdir"] == "/workspace"
    resolved = load_suite(tmp_path / "b" / "tasks" / "harbor" / "suite.yaml")
    assert "harbor-mixed-two-verifier" in resolved.environments


def test_a_shared_steps_network_must_be_the_agents(tmp_path: Path) -> None:
    """A step graded in the agent's sandbox has that sandbox's network: another is refused."""
    task = _mixed(tmp_path, "shared", "shared")
    toml = (task / "task.toml").read_text().split("[steps.verifier.environment]")[0]
    (task / "task.toml").write_text(toml + 'network_mode = "public"\n')
    done = import_harbor(task, tmp_path / "out")
    assert done.refused["mixed"].startswith(
        "a per-step network unlike the task's (steps.two.verifier.network_mode: public"
    ), done.refused


def test_steps_are_graded_away_from_the_agents_sandbox_on_docker(
    tmp_path: Path, docker_ready
) -> None:
    result = run_cli("import", "harbor", str(TASK), "--out", str(tmp_path))
    assert "1 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    suite_path = tmp_path / "tasks" / "harbor" / "suite.yaml"
    suite = yaml.safe_load(suite_path.read_text())
    suite["arms"].append({"name": "forger", "agent": "tests.interop.fake_reward_agent:FakeReward"})
    suite_path.write_text(yaml.safe_dump(suite, sort_keys=False))
    store = tmp_path / "h.db"
    run = run_cli("run", str(suite_path), "--store", f"sqlite:///{store}", "-q", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, status, attempts, evidence from trials")
    got = {arm: (status, attempts, json.loads(ev)) for arm, status, attempts, ev in rows}
    rewards = {arm: [s["reward"] for s in ev["steps"]] for arm, (_, _, ev) in got.items()}
    assert rewards == {"oracle": [1.0, 1.0], "noop": [0.0, None], "forger": [0.0, None]}
    assert {arm: status for arm, (status, _, _) in got.items()} == {
        "oracle": "passed",
        "noop": "failed",
        "forger": "failed",
    }
    assert all(attempts == 1 for _, attempts, _ in got.values())
    assert all(ev["graded_in_place"] is None and not ev["failure"] for _, _, ev in got.values())
