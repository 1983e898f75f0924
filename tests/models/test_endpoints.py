"""Model endpoints are probed before the run row and watched during the run.

Through ``harness run`` against real local HTTP servers (``tests/fakes/openai_server.py``)
and a port nothing listens on: a dead or key-refusing endpoint ends the run in seconds with
one line (exit 5, no run recorded); an upstream that goes down mid-run trips the breaker,
which stops new trials and leaves the run resumable (exit 3, 5 for a refused key), with one
retry line per cause and none with ``-q``.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli
from tests.fakes.openai_server import FakeOpenAI, Reply, completion, error

from .conftest import API_KEY, KEY_ENV


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_suite(
    tmp: Path, base_url: str, *, trials: int = 4, tasks: int = 5, **retries: object
) -> Path:
    items = [
        {
            "id": f"q{i}",
            "instruction": "2+2?",
            "graders": [{"type": "answer_match", "expected": "4"}],
        }
        for i in range(tasks)
    ]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": items}))
    model = {
        "name": "fake-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "max_retries": 1,
        "timeout_s": 5,
    }
    suite = {
        "name": "s",
        "seed": 1,
        "trials": trials,
        "tasks": ["tasks.yaml"],
        "arms": [{"name": "llm", "agent": "llm", "model": model}],
        "concurrency": 1,
        "retries": {"max_attempts": 3, "backoff_s": 0, **retries},
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def run(suite: Path, db: Path, *extra: str):
    start = time.monotonic()
    result = run_cli(
        "run", str(suite), "--store", f"sqlite:///{db}", *extra, env={KEY_ENV: API_KEY}
    )
    return result, time.monotonic() - start


def load_allowance() -> float:
    """Seconds to allow beyond a bound measured on an idle machine: this machine's CLI start-up now.

    Other test processes can load the machine twentyfold; a `harness run --help` timed here slows
    the same way, so the bounds below stay bounds on the harness's own waiting, not on the load.
    """
    start = time.monotonic()
    run_cli("run", "--help")
    return 20 * (time.monotonic() - start)


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_a_closed_port_ends_the_run_before_it_starts(tmp_path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    suite = write_suite(tmp_path, url, trials=16)  # 80 trials planned
    result, seconds = run(suite, tmp_path / "s.db")
    assert result.returncode == 5, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert "arm 'llm'" in lines[0] and url in lines[0] and "unreachable" in lines[0]
    assert seconds < 60 + load_allowance()  # about 2 s idle (measured in docs/faults.md)
    assert not (tmp_path / "s.db").exists() or rows(tmp_path / "s.db", "SELECT id FROM runs") == []


def test_a_refused_key_ends_the_run_before_it_starts(tmp_path) -> None:
    with FakeOpenAI() as server:
        server.models = error(401, "invalid api key")
        result, _ = run(write_suite(tmp_path, server.base_url), tmp_path / "s.db")
        assert server.model_requests() == []  # no model call was made
    assert result.returncode == 5, result.stderr
    assert f"refused the key in ${KEY_ENV} (HTTP 401" in result.stderr
    assert API_KEY not in result.stderr


def test_an_endpoint_without_a_model_list_or_without_the_model_only_warns(tmp_path) -> None:
    with FakeOpenAI(default=completion("4")) as server:
        server.models = error(404, "no such route")
        result, _ = run(
            write_suite(tmp_path, server.base_url, trials=1, tasks=1), tmp_path / "a.db"
        )
        assert result.returncode == 0, result.stderr
        assert "answered 404 to GET" in result.stderr and "/v1" in result.stderr
        server.models = Reply(body={"object": "list", "data": [{"id": "other-model"}]})
        result, _ = run(
            write_suite(tmp_path, server.base_url, trials=1, tasks=1), tmp_path / "b.db"
        )
        assert result.returncode == 0, result.stderr
        assert "does not list model 'fake-model'" in result.stderr


def test_an_upstream_that_goes_down_mid_run_trips_the_breaker_and_the_run_resumes(tmp_path):
    db = tmp_path / "s.db"
    with FakeOpenAI(default=error(503, "overloaded")) as server:
        server.push(completion("4"), completion("4"))  # two trials pass, then the outage
        suite = write_suite(tmp_path, server.base_url, trials=4)  # 20 trials planned
        result, seconds = run(suite, db)
        assert result.returncode == 3, result.stderr
        # 2 good trials, then 3 failed attempts in a row (the third trial's), 2 tries each
        assert len(server.model_requests()) == 2 + 3 * 2
        assert seconds < 30 + load_allowance()
        err = result.stderr
        retries = [ln for ln in err.splitlines() if "retrying" in ln]
        assert len(retries) == 1 and "HTTP 503" in retries[0], err  # one line per cause
        stop = next(ln for ln in err.splitlines() if ln.startswith("stopped:"))
        assert "arm 'llm'" in stop and server.base_url in stop
        assert "3 attempt(s) in a row (HTTP 503)" in stop and "--resume" in stop
        ((run_id, status),) = rows(db, "SELECT id, status FROM runs")
        assert status == "stopped"
        # only verdicts were written: the trial the outage cut stays unfinished
        assert rows(db, "SELECT status, count(*) FROM trials GROUP BY status") == [("passed", 2)]
        outcomes = rows(db, "SELECT outcome, count(*) FROM attempts GROUP BY outcome ORDER BY 1")
        assert outcomes == [("infra_error", 3), ("ok", 2)]

        server.default = completion("4")  # the endpoint is back
        resumed = run_cli(
            "run", "--resume", run_id, "--store", f"sqlite:///{db}", "-q", env={KEY_ENV: API_KEY}
        )
    assert resumed.returncode == 0, resumed.stderr
    assert rows(db, "SELECT status, count(*) FROM trials GROUP BY status") == [("passed", 20)]
    assert rows(db, "SELECT status FROM runs") == [("finished",)]


@pytest.mark.parametrize(
    ("status", "what"),
    [
        (401, "refused the harness's key"),
        (403, "refused the harness's key"),
        (404, "has no such model or path"),  # the harness's own llm request: the suite's name
    ],
)
def test_a_key_or_model_refused_mid_run_stops_it_once(tmp_path, status, what) -> None:
    db = tmp_path / "s.db"
    with FakeOpenAI(default=error(status, "key revoked or model unknown")) as server:
        result, _ = run(write_suite(tmp_path, server.base_url, trials=4), db, "-q")
        assert len(server.model_requests()) == 1  # never retried, never another trial
    assert result.returncode == 5, result.stderr
    stop = [ln for ln in result.stderr.splitlines() if ln.startswith("stopped:")]
    assert len(stop) == 1 and f"{what} (HTTP {status})" in stop[0]
    assert rows(db, "SELECT count(*) FROM trials") == [(0,)]
    assert rows(db, "SELECT status FROM runs") == [("stopped",)]


def test_quiet_runs_print_no_retry_lines(tmp_path) -> None:
    with FakeOpenAI(default=error(503, "overloaded")) as server:
        result, _ = run(write_suite(tmp_path, server.base_url, trials=2), tmp_path / "s.db", "-q")
    assert result.returncode == 3, result.stderr
    assert "retrying" not in result.stderr
    assert sum(ln.startswith("stopped:") for ln in result.stderr.splitlines()) == 1
