"""Harbor multi-step tasks with a separate verifier (issue 25, point 3): each step is graded in
a fresh grading sandbox from the verifier's image, given only the artifacts, while the
agent's sandbox lives on to the next step; a step with Harbor's shared verifier is graded in
the agent's sandbox. The import writes each step's grading; the shipped task runs on Docker:
the oracle passes both steps, noop fails the first (its ``min_reward`` stops the trial), and
an agent that forges the reward in its own sandbox gets 0."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.config.loader import load_suite
from harness.importers.harbor import import_harbor
from harness.network import recorded
from tests.conftest import REPO, run_cli
from tests.interop.tau_support import THIRD_PARTY
from tests.interop.test_harbor_import import _import_and_run_one

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
    # Each sandbox's network, as the trial row records it: the step's own is named.
    assert recorded(resolved.environments, resolved.task("harbor/mixed").task) == {
        "agent": "none",
        "grading": "none",
        "grading: step two": "allowlist: 10.9.0.1",
    }


def test_a_shared_steps_network_is_its_grading_in_place(tmp_path: Path) -> None:
    """A step graded in the agent's sandbox with a network of its own (public) is graded
    there on that network: the step's in-place grading gives it (the agent's sandbox is
    switched to it while graded); the other step keeps the agent's (none)."""
    task = _mixed(tmp_path, "shared", "shared")
    toml = (task / "task.toml").read_text().split("[steps.verifier.environment]")[0]
    (task / "task.toml").write_text(toml + 'network_mode = "public"\n')
    done = import_harbor(task, tmp_path / "out")
    assert done.imported == ["mixed"], done.refused
    written = _written(tmp_path / "out")
    one, two = written["steps"]
    assert "grading" not in one and "grading" not in written
    assert two["grading"] == {"internet": True} and "grade_in_place" in two
    resolved = load_suite(
        tmp_path / "out" / "tasks" / "harbor" / "suite.yaml", {"allow_internet": True}
    )
    assert recorded(resolved.environments, resolved.task("harbor/mixed").task) == {
        "agent": "none",
        "grading": "none",
        "grading: step two": "open",
    }


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


HARBOR = THIRD_PARTY / "harbor" / "examples" / "tasks"
OFFLINE = (
    "separate-verifier-multi-step",
    "verifier-mode-matrix/multistep-all-separate",
    "verifier-mode-matrix/multistep-top-separate-mixed",
    "verifier-mode-matrix/multistep-top-shared-mixed",
)
"""Harbor's multi-step examples with a separate verifier and no network (the other three
need the public network for a verifier)."""


def _rebuilt_on_the_local_base(tmp: Path) -> Path:
    """The examples with their images rebuilt on the offline base image (``ubuntu:24.04``
    is not here); their ``COPY --chmod`` (BuildKit only) is the import's to rewrite."""
    src = tmp / "src"
    for name in OFFLINE:
        shutil.copytree(HARBOR / name, src / name)
    for dockerfile in src.rglob("Dockerfile"):
        text = dockerfile.read_text().replace("FROM ubuntu:24.04", "FROM harness-base:bookworm-1")
        dockerfile.write_text(text)
    return src


def test_harbors_own_examples_pass_their_own_tests_on_docker(tmp_path: Path, docker_ready) -> None:
    """Harbor's tests check where each step is graded: the verifier's image marker present
    and the agent's absent, only the step's artifacts there, the agent's files gone; a shared
    step sees the agent's own files and ``/logs/verifier``. The oracle passes every step of
    all four; noop fails the first."""
    if not HARBOR.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the pinned Harbor examples are missing at {HARBOR}")
        pytest.skip(f"the pinned Harbor examples are not at {HARBOR}")
    src = _rebuilt_on_the_local_base(tmp_path)
    result = run_cli("import", "harbor", str(src), "--out", str(tmp_path / "out"))
    assert "4 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    store = tmp_path / "h.db"
    suite = tmp_path / "out" / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute(
        "select arm, task_id, status, reason, evidence from trials"
    )
    got = {(arm, task): (status, reason, json.loads(ev)) for arm, task, status, reason, ev in rows}
    assert len(got) == 8
    for (arm, task), (status, reason, ev) in got.items():
        steps = ev["steps"]
        if arm == "oracle":
            assert status == "passed" and all(s["reward"] == 1.0 for s in steps), (task, reason)
        else:
            assert status == "failed" and steps[0]["reward"] == 0.0, (task, reason)
    mixed = got[("oracle", "harbor/verifier-mode-matrix-multistep-top-separate-mixed")]
    assert [s["graded_in_place"] is not None for s in mixed[2]["steps"]] == [False, True, False]
    assert "step shared-override: reward 1 (graded in place)" in mixed[1]
    assert not mixed[1].startswith("graded in place")
    separate = got[("oracle", "harbor/verifier-mode-matrix-multistep-all-separate")]
    assert separate[2]["graded_in_place"] is None


def _upload_task(root: Path) -> Path:
    """Two steps: ``make`` writes greet.sh; ``configure`` gets ``workdir/`` (name.txt and a
    setup.sh that trims it and removes itself), a healthcheck that greet.sh is there, and
    ``[steps.verifier.env]`` with the expected greeting."""
    task = root / "uploads"
    for d in ("environment", "steps/make/tests", "steps/make/solution", "steps/configure/tests",
              "steps/configure/solution", "steps/configure/workdir"):  # fmt: skip
        (task / d).mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:bookworm-1\nWORKDIR /app\n")
    make, conf = task / "steps" / "make", task / "steps" / "configure"
    (make / "instruction.md").write_text("Create /app/greet.sh.")
    (make / "solution" / "solve.sh").write_text(
        "printf '#!/bin/bash\\necho hi\\n' > /app/greet.sh; chmod +x /app/greet.sh\n"
    )
    (make / "tests" / "test.sh").write_text(
        "[ -x /app/greet.sh ] && echo 1 > /logs/verifier/reward.txt || echo 0 > "
        "/logs/verifier/reward.txt\n"
    )
    (conf / "instruction.md").write_text("Make greet.sh greet the name in /app/name.txt.")
    (conf / "workdir" / "name.txt").write_text("Ada  \n\n")
    (conf / "workdir" / "setup.sh").write_text(
        'printf "%s\\n" "$(tr -d "[:space:]" < name.txt)" > name.txt; rm -- "$0"\n'
    )
    (conf / "solution" / "solve.sh").write_text(
        "printf '#!/bin/bash\\necho \"hello, $(cat /app/name.txt)\"\\n' > /app/greet.sh\n"
    )
    (conf / "tests" / "test.sh").write_text(
        '[ ! -e /app/setup.sh ] && [ "$("$HARNESS_AS_AGENT" /app/greet.sh)" = "$WANT" ] '
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    (task / "task.toml").write_text(
        '[environment]\nnetwork_mode = "no-network"\n'
        '[[steps]]\nname = "make"\n'
        '[[steps]]\nname = "configure"\n'
        '[steps.healthcheck]\ncommand = "test -x /app/greet.sh"\ninterval_sec = 1\nretries = 1\n'
        '[steps.verifier.env]\nWANT = "hello, Ada"\n'
    )
    return task


def test_step_uploads_healthchecks_and_verifier_variables_on_docker(
    tmp_path: Path, docker_ready
) -> None:
    """The oracle passes both steps (the upload trimmed by its setup.sh, the healthcheck
    passing, the tests reading WANT); noop fails the first, and the second's healthcheck
    (no greet.sh: what the agent left) fails it as the agent's broken environment."""
    outcome = _import_and_run_one(tmp_path, _upload_task(tmp_path / "src"))
    rewards = {arm: [s["reward"] for s in got[2]["steps"]] for arm, got in outcome.items()}
    assert rewards == {"oracle": [1.0, 1.0], "noop": [0.0, 0.0]}, outcome
    assert outcome["oracle"][0] == "passed"
    noop = outcome["noop"][2]
    assert "healthcheck 'test -x /app/greet.sh' failed 1 times" in noop["steps"][1]["reasons"][0]
    assert outcome["noop"][0] == "failed" and "setup command" in noop["failure"]
