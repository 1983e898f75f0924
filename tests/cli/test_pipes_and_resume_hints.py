"""Small front-door promises: a gate piped into `head` keeps its verdict's exit code, and
every printed resume command keeps a store that is not the default."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from harness.store.refs import resume_command
from tests.cli.test_usage_errors import _main
from tests.conftest import REPO, write_suite


def test_gate_piped_into_head_keeps_its_exit_code(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    suite = write_suite(tmp_path / "s", n_tasks=2, gate={"rule": "improvement"})
    assert _main("run", str(suite), "--store", url, "-q")[0] == 0
    alone = subprocess.run(
        [sys.executable, "-m", "harness.cli", "gate", "latest", "--store", url],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert alone.returncode in (0, 11, 12, 13), alone.stderr
    for fmt in ("terminal", "json"):
        piped = subprocess.run(
            ["bash", "-o", "pipefail", "-c",
             f'"{sys.executable}" -m harness.cli gate latest --format {fmt} --store "{url}" '
             "| head -c 1"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert piped.returncode == alone.returncode, (fmt, piped.stderr)
        assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr


def test_resume_commands_keep_a_store_that_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_STORE", raising=False)
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    assert resume_command("r1", url) == f"harness run --resume r1 --store {url}"
    assert resume_command("r1", "sqlite:///.harness/harness.db") == "harness run --resume r1"
    monkeypatch.setenv("HARNESS_STORE", url)  # a store the bare command opens anyway
    assert resume_command("r1", url) == "harness run --resume r1"
    secret = "postgresql://u:hunter2@db/evals"
    assert "hunter2" not in resume_command("r1", secret) and "u:***@db" in resume_command(
        "r1", secret
    )
    monkeypatch.delenv("HARNESS_STORE")

    suite = write_suite(tmp_path / "s", n_tasks=2)
    assert _main("run", str(suite), "--store", url, "-q")[0] == 0
    with sqlite3.connect(tmp_path / "elsewhere.db") as conn:  # its owner died mid-run
        conn.execute("UPDATE runs SET status = 'running', pid = 2147483646")
    code, out, _ = _main("runs", "--json", "--store", url)
    [run] = json.loads(out)
    assert run["resume"] == f"harness run --resume {run['id']} --store {url}"
    code, out, _ = _main("runs", "--store", url)
    assert f"--store {url}" in out.replace("\n", "")
    code, _, err = _main("run", "--resume", run["id"][:-2], "-q", "--store", url)
    assert code == 0, err
