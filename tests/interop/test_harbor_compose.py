"""Harbor's docker-compose environments read as services: what is read, and a one-line
refusal naming the key for what is not (published ports, networks of a sidecar's own,
build options, volumes that are not named); a backend that cannot start services refuses
the suite at load, naming the task."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.config.loader import load_suite
from harness.importers.harbor import import_harbor
from harness.importers.harbor_compose import Refused, services
from tests.conftest import run_cli

COMPOSE = """
services:
  main:
    depends_on:
      db: {condition: service_healthy}
    volumes: ["evidence:/evidence"]
  db:
    build: {context: ./db, dockerfile: Db.Dockerfile}
    entrypoint: ["/bin/sh", "-c"]
    command: ["echo $$HOME > /evidence/home; exec sleep infinity"]
    environment: ["MODE=test"]
    volumes: ["evidence:/evidence", "${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}"]
    healthcheck:
      test: ["CMD-SHELL", "test -f /evidence/home"]
      interval: 1m30s
      start_period: 500ms
      retries: 4
    expose: ["5432"]
  cache:
    image: harness-base:latest
    depends_on: [db]
volumes:
  evidence:
"""


def _read(tmp: Path, text: str) -> tuple[dict, dict]:
    (tmp / "docker-compose.yaml").write_text(text)
    return services(tmp)


def test_what_is_read(tmp_path: Path) -> None:
    sidecars, volumes = _read(tmp_path, COMPOSE)
    db = sidecars["db"]
    assert db["image"] == {"dockerfile": "Db.Dockerfile"} and db["context"] == "./db"
    assert db["command"] == ["/bin/sh", "-c", "echo $HOME > /evidence/home; exec sleep infinity"]
    assert db["env"] == {"MODE": "test"}
    assert db["healthcheck"] == {
        "command": ["sh", "-c", "test -f /evidence/home"],
        "interval_s": 90.0,
        "start_period_s": 0.5,
        "retries": 4,
    }
    assert db["volumes"] == {"evidence": "/evidence", "artifacts": "/logs/artifacts"}
    assert sidecars["cache"] == {
        "image": {"ref": "harness-base:latest"}, "env": {}, "depends_on": ["db"]
    }  # fmt: skip
    # Harbor mounts its artifacts dir in the agent's container too.
    assert volumes == {"evidence": "/evidence", "artifacts": "/logs/artifacts"}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"ports": ["8080:80"]}, "docker-compose setting services.cache.ports"),
        ({"networks": ["default"]}, "a network of its own (services.cache.networks)"),
        ({"network_mode": "host"}, "a network of its own (services.cache.network_mode)"),
        ({"volumes": ["/etc:/host-etc"]}, "not a named volume (services.cache.volumes"),
        ({"healthcheck": {"test": ["NONE"]}}, "healthcheck it cannot read"),
        ({"healthcheck": {"test": "true", "interval": "soon"}}, "duration it cannot read"),
        ({"image": None, "build": {"context": ".", "args": {"A": "1"}}}, "build.args"),
    ],
)
def test_what_is_refused_names_the_key(tmp_path: Path, change: dict, why: str) -> None:
    doc = yaml.safe_load(COMPOSE)
    doc["services"]["cache"].update(change)
    doc["services"]["cache"] = {k: v for k, v in doc["services"]["cache"].items() if v is not None}
    with pytest.raises(Refused, match=None) as err:
        _read(tmp_path, yaml.safe_dump(doc))
    assert why in str(err.value)
    assert "\n" not in str(err.value)


def test_a_backend_without_services_refuses_at_load(tmp_path: Path) -> None:
    task = tmp_path / "with-db"
    (task / "environment" / "db").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM harness-base:latest\nWORKDIR /app\n")
    (task / "environment" / "db" / "Dockerfile").write_text("FROM harness-base:latest\n")
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  db:\n    build: ./db\n")
    (task / "instruction.md").write_text("use the db")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text('[environment]\nnetwork_mode = "no-network"\n')
    done = import_harbor(task, tmp_path / "out")
    assert done.imported == ["with-db"], done.refused
    suite = tmp_path / "out" / "tasks" / "harbor" / "suite.yaml"
    assert load_suite(suite).environments["harbor-with-db"].spec.services["db"].context == "./db"
    result = run_cli("run", str(suite), "--sandbox", "bwrap", "-q")
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert "task 'harbor/with-db': environment 'harbor-with-db' has services" in line, line
