"""Your own agent program in a sandbox, done right: the command agent's ``program`` is pinned
by content and installed at image-build time as its own layer (Docker) or bound read-only
(bwrap), like the ready-made CLIs; trials pair on the task image underneath; the lock file
records it; ``where: host`` beside an isolating sandbox is refused; the viewer shows the
user's command, not the relay the harness wraps it in."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_docker, run_cli, trial_page
from tests.docker.test_docker_proxy import KEY, KEY_ENV, KV_TASK, PROGRAM, _kv_environment
from tests.fakes.openai_server import FakeOpenAI, call, completion
from tests.integrity.test_bwrap_sandbox import require_bwrap

COMMAND = 'python3 "$HARNESS_PROGRAM/agent_program.py" --dump-env'


def _suite(tmp: Path, sandbox: str, base_url: str, **arm_params) -> Path:
    _kv_environment(tmp / "environments")
    (tmp / "environments/kv/files/agent_program.py").unlink()  # not in the task's image
    agent = tmp / "my-agent"
    agent.mkdir(exist_ok=True)
    shutil.copy(PROGRAM, agent / "agent_program.py")
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [KV_TASK]}))
    model = {"name": "fake-model", "base_url": base_url, "api_key_env": KEY_ENV, "timeout_s": 10}
    suite = {
        "name": "own-program",
        "seed": 3,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "environments_dir": "environments",
        "sandbox": sandbox,
        "arms": [
            {"name": "noop", "agent": "noop"},
            {
                "name": "mine",
                "agent": "command",
                "params": {"program": "my-agent/", "command": COMMAND, **arm_params},
                "model": model,
            },
        ],
        "budgets": {"timeout_s": 120},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def _ready(sandbox: str) -> None:
    if sandbox == "docker":
        require_docker()
    else:
        require_bwrap()


@pytest.mark.parametrize("sandbox", ["docker", "bwrap"])
def test_own_program_is_installed_pinned_and_paired_on_the_task_image(sandbox, tmp_path):
    _ready(sandbox)
    env = {KEY_ENV: KEY, "HARNESS_CLI_CACHE": str(tmp_path / "cache")}
    with FakeOpenAI() as server:
        server.push(
            completion(tool_calls=[call("kv_get", {"key": "color"})]),
            completion(tool_calls=[call("kv_set", {"key": "color", "value": "blue"})]),
            completion("It was red."),
        )
        suite = _suite(tmp_path, sandbox, server.base_url)
        db = tmp_path / "p.db"
        result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", env=env)
        assert result.returncode == 0, result.stdout + result.stderr

    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = {r["arm"]: r for r in conn.execute("SELECT * FROM trials")}
        run = conn.execute("SELECT image_ids, id FROM runs").fetchone()
        events = conn.execute(
            "SELECT e.kind, e.args, e.content FROM trajectory_events e JOIN trials t ON "
            "t.id = e.trial_id WHERE t.arm = 'mine'"
        ).fetchall()
    mine, noop = rows["mine"], rows["noop"]
    assert mine["status"] == "passed", mine["reason"]
    task_image = json.loads(run["image_ids"])["kv"]
    # The program is a layer over the task image; both arms pair on the image underneath.
    assert mine["task_image_id"] == noop["task_image_id"] == noop["image_id"] == task_image
    assert mine["image_id"] != task_image
    # The program ran from where $HARNESS_PROGRAM says, inside the sandbox.
    dumped = next(json.loads(e["content"]) for e in events if (e["content"] or "")[:1] == "{")
    assert dumped["HARNESS_PROGRAM"].startswith("/opt/harness/agents/program-")
    # The trajectory and the viewer's trial page show the user's command, not the relay.
    [command] = [json.loads(e["args"]) for e in events if e["kind"] == "command"]
    assert command["command"] == COMMAND
    page = trial_page(db, mine["id"])
    assert "$HARNESS_PROGRAM/agent_program.py" in page and "AF_UNIX" not in page
    compared = run_cli("compare", "latest:noop", "latest:mine", "--json", "--store",
                       f"sqlite:///{db}")  # fmt: skip
    assert compared.returncode == 0, compared.stderr  # not refused for differing images
    assert not json.loads(compared.stdout)["refused"]
    if sandbox == "docker":
        _check_one_layer(task_image, mine["image_id"])
    _check_lock(suite, env)


def _check_one_layer(task_image: str, program_image: str) -> None:
    import docker

    client = docker.from_env()
    try:
        base = client.images.get(task_image).attrs["RootFS"]["Layers"]
        built = client.images.get(program_image).attrs["RootFS"]["Layers"]
        labels = client.images.get(program_image).labels
    finally:
        client.close()
    assert built[: len(base)] == base and len(built) == len(base) + 1
    assert labels["harness.agent.npm"].startswith("file:my-agent/@sha256:")


def _check_lock(suite: Path, env: dict) -> None:
    """`harness lock` records the program by its digest; a changed program is refused by
    `--locked` before any trial, in one line naming it."""
    locked = run_cli("lock", str(suite), env=env)
    assert locked.returncode == 0, locked.stderr
    entry = json.loads(suite.with_suffix(".lock.json").read_text())["environments"]["kv"]
    [(key, pin)] = entry["agents"].items()
    assert key.startswith("program-") and pin["npm"].startswith("file:my-agent/@sha256:")
    program = suite.parent / "my-agent/agent_program.py"
    program.write_text(program.read_text() + "\n# changed\n")
    again = run_cli("run", str(suite), "--locked", "-q", "--store",
                    f"sqlite:///{suite.parent / 'l.db'}", env=env)  # fmt: skip
    assert again.returncode == 5, again.stderr
    assert key in again.stderr and len(again.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("sandbox", ["docker", "bwrap"])
def test_where_host_beside_an_isolating_sandbox_is_refused(sandbox, tmp_path):
    from harness.errors import ConfigError
    from harness.resolve import load

    suite = _suite(tmp_path, sandbox, "http://127.0.0.1:9/v1", where="host")
    with pytest.raises(ConfigError) as info:
        load(suite)
    err = info.value
    assert err.field == "arms[1].params.where" and err.line is not None
    assert "outside sandbox" in err.message and "see none of the task's files" in err.message
    doc = yaml.safe_load(suite.read_text())
    doc["sandbox"] = "unsafe-local"  # isolates nothing: a host program is what it is
    suite.write_text(yaml.safe_dump(doc))
    load(suite)


def test_a_program_that_does_not_exist_is_a_load_error_at_its_line(tmp_path):
    from harness.errors import ConfigError
    from harness.resolve import load

    suite = _suite(tmp_path, "unsafe-local", "http://127.0.0.1:9/v1", program="my-agnet/")
    with pytest.raises(ConfigError) as info:
        load(suite)
    assert info.value.field == "arms[1].params.program"
    assert "no such file or folder" in info.value.message and "my-agnet" in info.value.message
    lines = suite.read_text().splitlines()
    assert lines[info.value.line - 1].strip().startswith("program:")
