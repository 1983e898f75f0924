"""Harbor's container start (``harbor_health``): the image's own ENTRYPOINT is started and
``[environment.healthcheck]`` polled before the agent, as Harbor does. On Docker, a server the
entrypoint starts 3 s late is up when the oracle fetches from it (the healthcheck waited);
without the healthcheck the same oracle fails (nothing waited)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.importers import harbor_health
from harness.importers.harbor import import_harbor
from tests.conftest import run_cli
from tests.interop.test_harbor_import import _import_and_run_one

ENTRY = """#!/bin/bash
(sleep 3 && python3 -m http.server 8080 --bind 127.0.0.1 --directory /app) &
exec sleep infinity
"""
HEALTH = """
[environment.healthcheck]
command = "exec 3<>/dev/tcp/127.0.0.1/8080"
interval_sec = 1
timeout_sec = 2
start_period_sec = 10
start_interval_sec = 1
retries = 3
"""


def _task(root: Path, name: str, health: bool) -> Path:
    task = root / name
    for d in ("environment", "tests", "solution"):
        (task / d).mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(
        "FROM harness-base:bookworm-1\nWORKDIR /app\nRUN echo ok > /app/index.html\n"
        "COPY entrypoint.sh /entrypoint.sh\nRUN chmod 755 /entrypoint.sh\n"
        'ENTRYPOINT ["/entrypoint.sh"]\n'
    )
    (task / "environment" / "entrypoint.sh").write_text(ENTRY)
    (task / "instruction.md").write_text("Fetch http://127.0.0.1:8080/ into /app/result.txt.")
    (task / "solution" / "solve.sh").write_text(
        "python3 -c \"import urllib.request as u; open('/app/result.txt', 'wb')"
        ".write(u.urlopen('http://127.0.0.1:8080/').read())\"\n"
    )
    (task / "tests" / "test.sh").write_text(
        "grep -q ok /app/result.txt && echo 1 > /logs/verifier/reward.txt"
        " || echo 0 > /logs/verifier/reward.txt\n"
    )
    (task / "task.toml").write_text(
        '[environment]\nnetwork_mode = "no-network"\n' + (HEALTH if health else "")
    )
    return task


def test_the_entrypoint_is_read_as_docker_reads_it() -> None:
    assert harbor_health.entrypoint('FROM a\nENTRYPOINT ["/e.sh", "x y"]\n') == "/e.sh 'x y'"
    assert harbor_health.entrypoint("FROM a\nENTRYPOINT exec srv --port 1\n") == (
        "/bin/sh -c 'exec srv --port 1'"
    )
    # Only the last stage's own: an earlier stage's is not the image's.
    assert harbor_health.entrypoint('FROM a\nENTRYPOINT ["x"]\nFROM b\nRUN true\n') is None
    assert harbor_health.entrypoint('FROM a\nENTRYPOINT ["x", \\\n "y"]\n') == "x y"


def test_an_unreadable_healthcheck_is_refused_naming_the_field(tmp_path: Path) -> None:
    task = _task(tmp_path, "bad", health=True)
    text = (task / "task.toml").read_text().replace("retries = 3", 'retries = "many"')
    (task / "task.toml").write_text(text)
    done = import_harbor(task, tmp_path / "out")
    assert done.refused == {
        "bad": "a readable healthcheck (environment.healthcheck.retries: 'many')"
    }


def test_a_healthcheck_waits_for_the_entrypoints_server_on_docker(
    tmp_path: Path, docker_ready
) -> None:
    src = tmp_path / "src"
    _task(src, "waits", health=True)
    _task(src, "races", health=False)
    out = tmp_path / "out"
    result = run_cli("import", "harbor", str(src), "--out", str(out))
    assert "2 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    env = yaml.safe_load((out / "environments" / "harbor-waits" / "environment.yaml").read_text())
    assert env["setup"][0] == "(setsid nohup /entrypoint.sh >/dev/null 2>&1 &)"
    assert len(env["setup"]) == 2
    store = tmp_path / "h.db"
    suite = out / "tasks" / "harbor" / "suite.yaml"
    run = run_cli("run", str(suite), "--store", f"sqlite:///{store}", "-q", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, task_id, status, attempts from trials")
    got = {(arm, task): (status, n) for arm, task, status, n in rows}
    assert got == {
        ("oracle", "harbor/waits"): ("passed", 1),
        ("noop", "harbor/waits"): ("failed", 1),
        ("oracle", "harbor/races"): ("failed", 1),  # fetched before the server was up
        ("noop", "harbor/races"): ("failed", 1),
    }


@pytest.mark.parametrize("field", ["command", "interval_sec"])
def test_wait_command_refuses_what_it_cannot_read(field: str) -> None:
    table = {"command": "true", "interval_sec": 1}
    table[field] = None
    with pytest.raises(harbor_health.Refused, match=f"environment.healthcheck.{field}"):
        harbor_health.wait_command(table)


def _env_task(root: Path, env: str) -> Path:
    task = root / "env-task"
    for d in ("environment", "tests", "solution"):
        (task / d).mkdir(parents=True, exist_ok=True)
    (task / "environment" / "Dockerfile").write_text(
        "FROM harness-base:bookworm-1\nWORKDIR /app\nCOPY entrypoint.sh /entrypoint.sh\n"
        'RUN chmod 755 /entrypoint.sh\nENTRYPOINT ["/entrypoint.sh"]\n'
    )
    (task / "environment" / "entrypoint.sh").write_text(
        '#!/bin/sh\nprintf %s "${GREETING-unset}" > /tmp/startup-env\nexec sleep infinity\n'
    )
    (task / "instruction.md").write_text("Write $GREETING to /app/seen.")
    (task / "solution" / "solve.sh").write_text('printf %s "$GREETING" > /app/seen\n')
    want = 'hello $HOME "x"'  # kept literal: no expansion, quotes kept
    (task / "tests" / "test.sh").write_text(
        f"want='{want}'\n"
        '[ "$(cat /tmp/startup-env)" = "$want" ] && [ "$(cat /app/seen)" = "$want" ] '
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    (task / "task.toml").write_text(
        f'[environment]\nnetwork_mode = "no-network"\n[environment.env]\n{env}\n'
    )
    return task


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ('KEY = "${HOST_SECRET}"', "a literal value (environment.env.KEY: a host variable"),
        ("KEY = [1]", "a literal value (environment.env.KEY: not a string or number)"),
    ],
)
def test_environment_variables_the_image_cannot_hold_are_refused(
    tmp_path: Path, env: str, why: str
) -> None:
    done = import_harbor(_env_task(tmp_path, env), tmp_path / "out")
    assert done.refused["env-task"].startswith(why), done.refused


def test_environment_variables_reach_the_entrypoint_and_the_agent_on_docker(
    tmp_path: Path, docker_ready
) -> None:
    """``[environment.env]``: the entrypoint's and the agent's commands' environment (Harbor:
    the container's), its value kept literal."""
    task = _env_task(tmp_path / "src", "GREETING = 'hello $HOME \"x\"'")
    outcome = _import_and_run_one(tmp_path / "out", task)
    assert {arm: got[0] for arm, got in outcome.items()} == {"oracle": "passed", "noop": "failed"}
