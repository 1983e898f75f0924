"""`harness import harbor`: every Harbor example task imports or is refused with one line
naming the feature it needs; the shipped offline tasks in Harbor's layout run end to end on
Docker, the oracle passing and noop failing."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.config.loader import load_suite
from harness.errors import ConfigError
from harness.importers.harbor import find_tasks, import_harbor
from tests.conftest import REPO, run_cli
from tests.interop.tau_support import THIRD_PARTY

EXAMPLES = THIRD_PARTY / "harbor" / "examples" / "tasks"
SHIPPED = REPO / "tasks" / "harbor-examples"
SERVICES = REPO / "tasks" / "harbor-services"
STEPS = REPO / "tasks" / "harbor-steps"


def test_every_example_imports_or_is_refused_in_one_line(tmp_path: Path) -> None:
    if not EXAMPLES.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the pinned Harbor examples are missing at {EXAMPLES}")
        pytest.skip(f"the pinned Harbor examples are not at {EXAMPLES}")
    result = run_cli("import", "harbor", str(EXAMPLES), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    imported = [line.split()[1] for line in lines if line.startswith("imported  ")]
    refused = [line for line in lines if line.startswith("refused   ")]
    assert len(imported) + len(refused) == len(find_tasks(EXAMPLES))
    assert imported and refused
    assert all(re.fullmatch(r"refused   \S+: needs \S.*", line) for line in refused)
    # Multi-container environments import (their sidecars become services), but for what
    # the harness does not give a sidecar: a network of its own.
    assert "network-policy-matrix/static/compose-sidecar-controlled" in imported
    assert any("GPUs" in line for line in refused)
    assert "hello-world" in imported
    assert "have Harbor's public network" in result.stdout  # hello-world: the default
    suite = tmp_path / "tasks" / "harbor" / "suite.yaml"
    with pytest.raises(ConfigError, match="--allow-internet"):
        load_suite(suite)  # open egress is the user's to allow
    resolved = load_suite(suite, {"allow_internet": True})
    assert len(resolved.tasks) == len(imported)
    task = resolved.task("harbor/hello-world").task
    assert task.solution and "hello.txt" in task.solution.commands[0]
    assert task.internet and task.grading.internet and task.grading.root
    assert resolved.environments["harbor-hello-world"].spec.workdir == "/app"
    # Per-phase settings the harness cannot honour are refused, never dropped.
    why = dict(line[10:].split(": needs ", 1) for line in refused)
    assert (
        "[agent] allowed_hosts has '*.amazonaws.com'"
        in why["network-policy-matrix/dynamic/shared-allowlist"]
    )
    # ... and honoured where it differs by phase: the verifier graded in place on its own.
    e_v_diff = resolved.task("harbor/network-policy-matrix-dynamic-e-v-diff").task
    assert e_v_diff.grade_in_place and e_v_diff.internet and e_v_diff.grading.network == []
    assert any("services.helper.networks" in line for line in refused)
    # Multi-step tasks import (their steps graded in place), but for what steps cannot have.
    assert "hello-multi-step-simple" in imported
    assert "verifier-mode-matrix/multistep-all-shared" in imported
    assert "hello-multi-step-advanced" in imported  # uploads, healthcheck, verifier variables
    implement = resolved.task("harbor/hello-multi-step-advanced").task.steps[1]
    assert implement.files and implement.setup[0] == "bash ./setup.sh"
    assert "test -x /app/greet.sh" in implement.setup[1]
    steps = resolved.task("harbor/hello-multi-step-simple").task.steps
    assert [s.name for s in steps] == ["create-file", "append-content"]
    # A separate verifier, the task's or a step's, grades its steps in a sandbox of its own.
    mixed = resolved.task("harbor/verifier-mode-matrix-multistep-top-separate-mixed").task
    assert [(s.grading is not None, s.grade_in_place is not None) for s in mixed.steps] == [
        (True, False),
        (False, True),
        (True, False),
    ]
    for name in ("separate-verifier-multi-step", "network-policy-matrix/dynamic/e-ve-sve-diff"):
        assert name in imported
    # A container healthcheck: the image's entrypoint started, then the check polled.
    health = resolved.environments["harbor-hello-healthcheck"].spec.setup
    assert health[0] == "(setsid nohup /entrypoint.sh >/dev/null 2>&1 &)"
    assert "curl -sf http://localhost:8080/" in health[1]


def _task(tmp: Path, toml: str, workdir: str = "/app") -> Path:
    task = tmp / "net-task"
    (task / "environment").mkdir(parents=True, exist_ok=True)
    (task / "tests").mkdir(exist_ok=True)
    (task / "environment" / "Dockerfile").write_text(
        f"FROM harness-base:latest\nWORKDIR {workdir}\n"
    )
    (task / "instruction.md").write_text("fetch it")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text(toml)
    return task


@pytest.mark.parametrize(
    ("toml", "agent", "grading"),
    [
        ("", {"internet": True}, {"internet": True, "root": True}),  # Harbor's default: public
        ("[environment]\nallow_internet = false\n", {}, {}),
        (
            "[environment]\nallow_internet = true\n",
            {"internet": True},
            {"internet": True, "root": True},
        ),
        ('[environment]\nnetwork_mode = "no-network"\n', {}, {}),
        (
            '[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "10.0.0.0/8"]\n',
            {"network": ["pypi.org", "10.0.0.0/8"]},
            {"network": ["pypi.org", "10.0.0.0/8"], "root": True},
        ),
        (
            '[environment]\nnetwork_mode = "no-network"\n[agent]\nnetwork_mode = "public"\n'
            '[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n',
            {"internet": True},
            {"network": ["pypi.org"], "root": True},
        ),
    ],
)
def test_each_phases_network_becomes_its_sandboxs(
    tmp_path: Path, toml: str, agent: dict, grading: dict
) -> None:
    done = import_harbor(_task(tmp_path, toml), tmp_path / "out")
    assert done.imported == ["net-task"], done.refused

    entry = yaml.safe_load((tmp_path / "out" / "tasks" / "harbor" / "tasks.yaml").read_text())
    (written,) = entry["tasks"]
    assert {k: written[k] for k in ("internet", "network") if k in written} == agent
    assert written.get("grading", {}) == grading
    assert (done.open_egress == ["net-task"]) == ("internet" in agent or "internet" in grading)


@pytest.mark.parametrize(
    ("toml", "workdir", "reason"),
    [
        (
            '[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["*.iana.org"]\n',
            "/app",
            "wildcard host allowlists ([verifier] allowed_hosts has '*.iana.org'",
        ),
        (
            '[environment]\nnetwork_mode = "bridge"\n',
            "/app",
            "network_mode = bridge ([environment]",
        ),
    ],
)
def test_a_network_the_harness_cannot_give_is_refused(
    tmp_path: Path, toml: str, workdir: str, reason: str
) -> None:
    done = import_harbor(_task(tmp_path, toml, workdir), tmp_path / "out")
    assert done.imported == []
    assert done.refused["net-task"].startswith(reason), done.refused


def test_a_verifier_graded_in_place_gets_its_own_network_there(tmp_path: Path) -> None:
    """No WORKDIR: graded in the agent's sandbox, switched to the verifier's network (public)
    while graded: its grading gives the network, never root (the agent's container)."""
    done = import_harbor(_task(tmp_path, '[agent]\nnetwork_mode = "no-network"\n', "/"), tmp_path)
    assert done.imported == ["net-task"], done.refused
    (written,) = yaml.safe_load((tmp_path / "tasks" / "harbor" / "tasks.yaml").read_text())["tasks"]
    assert "grade_in_place" in written and written["grading"] == {"internet": True}
    assert "internet" not in written and "network" not in written
    assert done.open_egress == ["net-task"]


def test_refusal_names_the_feature(tmp_path: Path) -> None:
    task = tmp_path / "gpu-task"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:latest\n")
    (task / "instruction.md").write_text("train it")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text("[environment]\ngpus = 2\n")
    done = import_harbor(task, tmp_path / "out")
    assert done.refused == {"gpu-task": "GPUs (environment.gpus = 2)"}
    (task / "task.toml").write_text("[environment]\ngpus = 0\n")
    assert import_harbor(task, tmp_path / "out").imported == ["gpu-task"]
    # A key the import reads, with a value of the wrong kind: refused in one line, no traceback.
    (task / "task.toml").write_text('[environment]\ncpus = "many"\n')
    why = import_harbor(task, tmp_path / "out").refused["gpu-task"]
    assert why.startswith("a readable task.toml (environment.cpus: "), why


def test_shipped_tasks_run_on_docker(tmp_path: Path, docker_ready) -> None:
    result = run_cli("import", "harbor", str(SHIPPED), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "5 imported, 0 refused" in result.stdout
    assert_oracle_passes_noop_fails(tmp_path, tasks=5)


def assert_oracle_passes_noop_fails(out: Path, tasks: int, *options: str) -> None:
    """Run an imported suite (in ``out``) through the CLI: the oracle passes every task,
    noop fails every one with reward 0."""
    store = out / "h.db"
    suite = out / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", *options, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, task_id, status, reason from trials")
    outcome = {(arm, task): (status, reason) for arm, task, status, reason in rows}
    assert len(outcome) == 2 * tasks
    for (arm, task), (status, reason) in outcome.items():
        assert status == ("passed" if arm == "oracle" else "failed"), (arm, task, reason)
        if arm == "noop":
            assert "reward 0" in reason, reason


def _import_and_run_one(tmp: Path, source: Path) -> dict[str, tuple[str, str, dict]]:
    """Import a folder holding one task and run it on Docker: arm -> (status, reason,
    evidence)."""
    result = run_cli("import", "harbor", str(source), "--out", str(tmp))
    assert "1 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    store = tmp / "h.db"
    suite = tmp / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, status, reason, evidence from trials")
    return {arm: (status, reason, json.loads(ev)) for arm, status, reason, ev in rows}


def test_a_task_with_a_sidecar_runs_on_docker(tmp_path: Path, docker_ready) -> None:
    """The shipped multi-container task: its service is started fresh per trial and its
    tests read the service's state (graded in the agent's sandbox, which the row says)."""
    outcome = _import_and_run_one(tmp_path, SERVICES)
    assert outcome["oracle"][0] == "passed", outcome
    assert outcome["noop"][0] == "failed" and "reward 0" in outcome["noop"][1], outcome
    assert "graded in place: its tests may talk to its sidecars" in outcome["oracle"][1]


def test_a_multi_step_task_runs_on_docker(tmp_path: Path, docker_ready) -> None:
    """The shipped multi-step task: the oracle passes its 3 steps in one sandbox; noop fails
    the first, whose min_reward stops the trial there."""
    outcome = _import_and_run_one(tmp_path, STEPS)
    assert outcome["oracle"][0] == "passed"
    assert [s["reward"] for s in outcome["oracle"][2]["steps"]] == [1.0, 1.0, 1.0]
    assert outcome["noop"][0] == "failed"
    assert [s["reward"] for s in outcome["noop"][2]["steps"]] == [0.0, None, None]


def test_a_prebuilt_image_is_the_environments_image(tmp_path: Path) -> None:
    """Terminal-Bench's ``docker_image``: run as it is (pulled, pinned), no Dockerfile needed."""
    task = _task(
        tmp_path, '[environment]\ndocker_image = "example.org/tb/task:1"\nworkdir = "/app"\n'
    )
    for f in (task / "environment").iterdir():
        f.unlink()
    (task / "environment").rmdir()
    done = import_harbor(task, tmp_path / "out")
    assert done.imported == ["net-task"], done.refused
    env = yaml.safe_load(
        (tmp_path / "out" / "environments" / "harbor-net-task" / "environment.yaml").read_text()
    )
    assert env["image"] == {"ref": "example.org/tb/task:1"} and env["workdir"] == "/app"
