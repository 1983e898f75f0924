"""Infrastructure faults: crash-only retries, the rerun trap, the circuit breaker."""

from __future__ import annotations

import json

import anyio
import pytest
import yaml

from harness.breaker import CircuitBreaker
from harness.config import load_suite
from harness.errors import (
    AgentFailure,
    BudgetExceeded,
    ConfigError,
    GraderError,
    SandboxError,
    is_retryable,
)
from tests.conftest import in_parallel, write_suite


def _suite_with_env(tmp, n_tasks: int, p: float, **suite):
    env = tmp / "environments" / "plain"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text(yaml.safe_dump({"name": "plain"}))
    tasks = [
        {
            "id": f"t{i:03d}",
            "instruction": "Say 42.",
            "environment": "plain",
            "cluster": f"c{i % 10}",
            "graders": [{"type": "answer_match", "expected": "42"}],
            "solution": {"commands": ["true"], "answer": "42"},
        }
        for i in range(n_tasks)
    ]
    return write_suite(
        tmp / "suite",
        task_list=tasks,
        trials=1,
        concurrency=8,
        arms=[{"name": "a", "agent": "simulated", "params": {"p": p}}],
        **suite,
    )


def _verdicts(cli, suite, url, *extra):
    result = cli("run", str(suite), "--store", url, "-q", *extra)
    data = json.loads(cli("report", "--json", "--store", url).stdout)
    return result, data


@pytest.mark.slow
def test_rerun_trap_crash_only_retries_recover_p(tmp_path, cli):
    """Agent-evaluation guide: with crash-only reruns the measured rate estimates p, not (1 - f) p."""
    p, f, n = 0.6, 0.05, 400
    faulty = {
        "sandbox": "faulty",
        "sandbox_options": {"inner": "local", "create_failure": f, "kill": 0.0, "seed": 3},
    }
    clean_suite = _suite_with_env(tmp_path / "clean", n, p)
    retry_suite = _suite_with_env(
        tmp_path / "retry", n, p, retries={"max_attempts": 4, "backoff_s": 0}, **faulty
    )
    once_suite = _suite_with_env(
        tmp_path / "once", n, p, retries={"max_attempts": 1, "backoff_s": 0}, **faulty
    )
    # three independent runs (own suite, own store) at the same time
    (_, clean), (res, retried), (res1, once) = in_parallel(
        lambda: _verdicts(cli, clean_suite, f"sqlite:///{tmp_path / 'clean.db'}"),
        lambda: _verdicts(cli, retry_suite, f"sqlite:///{tmp_path / 'retry.db'}"),
        lambda: _verdicts(cli, once_suite, f"sqlite:///{tmp_path / 'once.db'}"),
    )
    assert res.returncode == 0, res.stderr
    assert res1.returncode == 3  # crashed trials are unresolved, and the exit code says so

    clean_rate = clean["arms"]["a"]["success"]["estimate"]
    assert retried["arms"]["a"]["success"]["estimate"] == clean_rate  # same verdicts, same seeds
    assert abs(clean_rate - p) < 3 * (p * (1 - p) / n) ** 0.5
    crashed = once["arms"]["a"]["trials_unresolved"]
    assert crashed > 0
    expected_biased = (1 - crashed / n) * clean_rate
    assert once["arms"]["a"]["success"]["estimate"] <= clean_rate
    assert abs(once["arms"]["a"]["success"]["estimate"] - expected_biased) < 0.03


def test_only_infrastructure_errors_are_retryable():
    assert is_retryable(SandboxError("daemon gone"))
    for exc in (
        AgentFailure("crash"),
        BudgetExceeded("max_steps"),
        GraderError("x"),
        ValueError("unknown bug"),
        RuntimeError("image build failed"),
    ):
        assert not is_retryable(exc)


@pytest.mark.parametrize("key", ["on_failure", "retry_failed", "rerun_failures"])
def test_no_configuration_can_rerun_failures(tmp_path, key):
    suite = write_suite(tmp_path, retries={"max_attempts": 3, key: True})
    with pytest.raises(ConfigError, match="unknown key"):
        load_suite(suite)


def test_breaker_holds_attempts_until_the_infrastructure_answers():
    async def main():
        up = {"answer": False, "probes": 0}

        async def health() -> bool:
            up["probes"] += 1
            return up["answer"]

        b = CircuitBreaker(window=10, threshold=0.8, min_calls=5, cooldown_s=0.01, health=health)
        for _ in range(5):
            await b.before_attempt()
            b.after_attempt(False)
        assert b.is_open

        async def recover() -> None:
            await anyio.sleep(0.2)
            up["answer"] = True

        waited = []

        async def attempt() -> None:
            await b.before_attempt()  # blocks while the infrastructure is down
            waited.append(anyio.current_time())

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(recover)
            for _ in range(3):
                tg.start_soon(attempt)
        assert len(waited) == 3 and min(waited) - start >= 0.2
        assert up["probes"] >= 2 and b.opened == 1 and not b.is_open
        assert b.paused_s >= 0.2

    anyio.run(main)


def test_breaker_opens_on_a_run_of_crashes_after_a_good_window():
    """An outage after a long good stretch: five crashes in a row open the breaker at once,
    not after the window's share of crashes reaches the threshold."""
    b = CircuitBreaker(window=20, threshold=0.8, min_calls=5)
    for _ in range(20):
        b.after_attempt(True)
    for _ in range(4):
        b.after_attempt(False)
    assert not b.is_open
    b.after_attempt(False)
    assert b.is_open
    b.after_attempt(True)
    assert not b.is_open


@pytest.mark.slow
def test_faulty_run_completes_with_crash_counts(tmp_path, cli):
    suite = _suite_with_env(
        tmp_path,
        60,
        0.7,
        retries={"max_attempts": 6, "backoff_s": 0},
        sandbox="faulty",
        sandbox_options={"inner": "local", "create_failure": 0.2, "kill": 0.3, "seed": 5},
    )
    url = f"sqlite:///{tmp_path / 'f.db'}"
    result = cli("run", str(suite), "--store", url, "-q")
    assert result.returncode == 0, result.stderr
    import sqlite3

    db = sqlite3.connect(tmp_path / "f.db")
    assert db.execute("SELECT count(*) FROM trials").fetchone()[0] == 60
    crashes = db.execute("SELECT count(*) FROM attempts WHERE outcome='infra_error'").fetchone()[0]
    assert crashes >= 5
    retried = db.execute("SELECT count(*) FROM trials WHERE attempts > 1").fetchone()[0]
    assert retried >= 5


def test_sandbox_options_reach_the_backend(tmp_path, cli):
    """A faulty backend configured never to fail must not fail: the suite's options arrive."""
    suite = _suite_with_env(
        tmp_path,
        30,
        0.5,
        sandbox="faulty",
        sandbox_options={"inner": "local", "create_failure": 0.0, "kill": 0.0},
    )
    url = f"sqlite:///{tmp_path / 'o.db'}"
    assert cli("run", str(suite), "--store", url, "-q").returncode == 0
    import sqlite3

    with sqlite3.connect(tmp_path / "o.db") as db:
        assert db.execute("SELECT count(*) FROM attempts WHERE outcome != 'ok'").fetchone()[0] == 0
