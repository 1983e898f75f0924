"""Harbor's artifacts from a sidecar (issue 25 point 2): ``sidecar-artifacts`` imports with its
``[[verifier.collect]]`` hook and its sidecar's files as ``grading.services``, and runs on
Docker rebuilt on the offline base image: after the agent's container is stopped the hook
snapshots the sidecar's in-memory counter, the sidecar's log and snapshot leave it as data and
land in the separate verifier's sandbox at their paths. The oracle passes, noop fails, and an
agent that forges both files in its own sandbox fails (only the sidecar's copies count).
Settings that cannot be honoured are one line naming the task, field and line."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from harness.config.loader import load_suite
from harness.errors import ConfigError
from harness.importers.harbor import import_harbor
from harness.resolve import resolve
from tests.conftest import run_cli
from tests.interop.tau_support import THIRD_PARTY

EXAMPLE = THIRD_PARTY / "harbor" / "examples" / "tasks" / "sidecar-artifacts"
CURL = '''#!/usr/bin/env python3
"""The few curl options Harbor's sidecar-artifacts uses (the offline base image has no curl)."""
import sys, urllib.error, urllib.request
args, method, headers, data, fail, url = sys.argv[1:], None, {}, None, False, None
while args:
    a = args.pop(0)
    if a.startswith("-") and set(a[1:]) <= set("sf"):
        fail = fail or "f" in a
    elif a == "-X":
        method = args.pop(0)
    elif a == "-H":
        k, _, v = args.pop(0).partition(":")
        headers[k.strip()] = v.strip()
    elif a == "-d":
        data = args.pop(0).encode()
    else:
        url = a
req = urllib.request.Request(url, data=data, headers=headers, method=method)
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        sys.stdout.buffer.write(r.read())
except urllib.error.HTTPError as e:
    sys.stdout.buffer.write(e.read())
    sys.exit(22 if fail else 0)
except OSError:
    sys.exit(7)
'''


def _rebuilt(tmp: Path) -> Path:
    """The example with its three images on the offline base image and a curl of ours (the
    sidecar's healthcheck and collect hook and the oracle use curl); task.toml, the compose
    file, the server, the tests and the solution as Harbor ships them."""
    if not EXAMPLE.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the pinned Harbor examples are missing at {EXAMPLE}")
        pytest.skip(f"the pinned Harbor examples are not at {EXAMPLE}")
    task = tmp / "src" / "sidecar-artifacts"
    shutil.copytree(EXAMPLE, task)
    for context in (task / "environment", task / "environment" / "api-server"):
        (context / "curl").write_text(CURL)
    base = "FROM harness-base:bookworm-1\nCOPY --chmod=755 curl /usr/local/bin/curl\n"
    (task / "environment" / "Dockerfile").write_text(base + "WORKDIR /app\n")
    (task / "environment" / "api-server" / "Dockerfile").write_text(
        base
        + 'COPY server.py /server.py\nRUN mkdir -p /var/log/api\nCMD ["python3", "/server.py"]\n'
    )
    tests = task / "tests" / "Dockerfile"
    tests.write_text(
        tests.read_text().replace("FROM python:3.12-slim", "FROM harness-base:bookworm-1")
    )
    return tmp / "src"


def test_the_example_imports_with_its_sidecars_files(tmp_path: Path) -> None:
    done = import_harbor(_rebuilt(tmp_path), tmp_path / "out")
    assert done.imported == ["sidecar-artifacts"], done.refused
    (task,) = yaml.safe_load((tmp_path / "out" / "tasks" / "harbor" / "tasks.yaml").read_text())[
        "tasks"
    ]
    assert task["grading"]["files"] == ["/logs/artifacts"]
    assert task["grading"]["services"] == {
        "api": {
            "paths": ["/var/log/api/orders.log", "/tmp/stats.json"],
            "collect": ["curl -s http://localhost:8000/stats > /tmp/stats.json"],
            "timeout_s": 30.0,
        }
    }
    assert "grade_in_place" not in task


def test_the_oracle_passes_and_noop_and_a_forger_fail_on_docker(
    tmp_path: Path, docker_ready
) -> None:
    src = _rebuilt(tmp_path)
    result = run_cli("import", "harbor", str(src), "--out", str(tmp_path / "out"))
    assert "1 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    suite_path = tmp_path / "out" / "tasks" / "harbor" / "suite.yaml"
    suite = yaml.safe_load(suite_path.read_text())
    suite["arms"].append({"name": "forger", "agent": "tests.interop.sidecar_forger:Forger"})
    suite_path.write_text(yaml.safe_dump(suite, sort_keys=False))
    store = tmp_path / "h.db"
    run = run_cli(
        "run", str(suite_path), "--store", f"sqlite:///{store}", "-q", "--allow-internet",
        timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, status, reason, evidence from trials")
    got = {arm: (status, reason, json.loads(ev)) for arm, status, reason, ev in rows}
    assert {arm: s for arm, (s, _, _) in got.items()} == {
        "oracle": "passed",
        "noop": "failed",
        "forger": "failed",
    }, {arm: r for arm, (_, r, _) in got.items()}
    said = {arm: json.dumps(ev["graders"]) for arm, (_, _, ev) in got.items()}
    assert "PASS: 3 distinct orders confirmed by sidecar evidence" in said["oracle"]
    assert (
        "expected 3 orders in the sidecar log, found 0" in said["noop"]
        or "orders.log was not" in said["noop"]
    )
    assert "expected 3 orders in the sidecar log, found 1" in said["forger"]
    assert not [c for c in _containers() if "harness-svc-" in c]  # nothing left


def _containers() -> list[str]:
    import docker

    # The low-level list reads names without inspecting each container, so one removed meanwhile by
    # another test's run cannot fail this check (a 404 on inspect did in CI).
    listed = docker.from_env().api.containers(all=True, filters={"name": "harness-svc-"})
    return [name for c in listed for name in c["Names"]]


def _resolved(tmp: Path, edit) -> None:
    import_harbor(_rebuilt(tmp), tmp / "out")
    tasks = tmp / "out" / "tasks" / "harbor" / "tasks.yaml"
    doc = yaml.safe_load(tasks.read_text())
    edit(doc["tasks"][0])
    tasks.write_text(yaml.safe_dump(doc, sort_keys=False))
    resolve(
        load_suite(tmp / "out" / "tasks" / "harbor" / "suite.yaml", {"allow_internet": True}),
        "docker",
    )


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (
            lambda t: t["grading"]["services"].update(db=t["grading"]["services"].pop("api")),
            "tasks[0].grading.services.db",
            "environment 'harbor-sidecar-artifacts' has no service 'db' (its services: api)",
        ),
        (
            lambda t: t["grading"]["services"]["api"].update(paths=["tmp/stats.json"]),
            "tasks[0].grading.services.api",
            "paths in a service must be absolute (tmp/stats.json)",
        ),
        (
            lambda t: t.update(
                grade_in_place="its tests talk to the sidecar",
                grading={"services": t["grading"]["services"]},
            ),
            "tasks[0].grading.services",
            "a task graded in place has no grading sandbox of its own",
        ),
    ],
)
def test_service_files_that_cannot_be_taken_are_one_line(
    tmp_path: Path, edit, field: str, said: str
) -> None:
    with pytest.raises(ConfigError) as got:
        _resolved(tmp_path, edit)
    assert got.value.field == field and said in got.value.message
    assert "\n" not in str(got.value)
