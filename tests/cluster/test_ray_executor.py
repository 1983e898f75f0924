"""The Ray executor on a real local Ray cluster (head + worker on loopback), through the CLI:
the same trial rows as the local executor, and a worker node killed mid-run loses nothing."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import REPO, count_trials, run_cli, wait_for  # noqa: E402

ROW = "SELECT arm, task_id, trial_index, seed, status, image_id FROM trials"


def _demo_suite(tmp: Path, n_tasks: int = 6, trials: int = 2, slow_s: float = 0, **extra) -> Path:
    """The demo suite (its Docker environment, both simulated arms), on fewer tasks; with
    ``slow_s`` an oracle arm whose solution first sleeps, so trials are in flight for a while."""
    doc = yaml.safe_load((ROOT / "tasks/demo/tasks.yaml").read_text())
    doc["tasks"] = doc["tasks"][:n_tasks]
    if slow_s:
        for task in doc["tasks"]:
            task["solution"]["commands"] = [f"sleep {slow_s}", *task["solution"]["commands"]]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump(doc))
    suite = yaml.safe_load((ROOT / "tasks/demo/suite.yaml").read_text())
    suite.update(
        tasks=["tasks.yaml"],
        environments_dir=str(ROOT / "environments"),
        trials=trials,
        concurrency=4,
        retries={"max_attempts": 3, "backoff_s": 0.2},
        **extra,
    )
    if slow_s:
        suite["arms"] = [{"name": "oracle", "agent": "oracle"}]
        suite.pop("report", None)
        suite.pop("gate", None)  # the demo's gate names arms this suite no longer has
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _rows(db: Path, sql: str = ROW) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(sql).fetchall())


def test_ray_is_imported_lazily():
    code = (
        "import sys, harness.cli, harness.runner, harness.executors, harness.config.models; "
        "assert 'ray' not in sys.modules, 'ray imported eagerly'"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_bad_executor_options_are_a_config_error(tmp_path, suite_writer):
    suite = suite_writer(tmp_path, executor="ray", executor_options={"num_cpu": 1})
    result = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path}/s.db", "-q")
    assert result.returncode == 2, result.stderr
    assert "executor_options.num_cpu" in result.stderr


def test_unreachable_cluster_fails_fast_and_leaves_no_running_run(tmp_path, suite_writer):
    pytest.importorskip("ray")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    suite = suite_writer(tmp_path, executor="ray", executor_options={"connect_timeout_s": 2})
    db = tmp_path / "s.db"
    start = time.monotonic()
    result = run_cli(
        "run", str(suite), "--ray-address", f"127.0.0.1:{port}", "--store", f"sqlite:///{db}"
    )
    assert result.returncode == 5, result.stderr
    assert time.monotonic() - start < 60
    assert f"cannot connect to the Ray cluster at 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()[0] == 0


def test_images_ship_to_a_node_whose_daemon_lacks_them(
    tmp_path, ray_cluster, docker_ready, second_docker_daemon
):
    """Worker node 'w2' talks to an empty Docker daemon of its own: the driver's pinned
    image reaches it through the Ray object store, with the same id, and its trials match a
    local run's."""
    import docker

    ray_cluster.add_worker(
        "w2", docker=0, resources={"docker_b": 2}, env={"DOCKER_HOST": second_docker_daemon}
    )
    try:
        ray_cluster.wait_docker(2, resource="docker_b")
        (tmp_path / "l").mkdir()
        local = _demo_suite(tmp_path / "l", 4, 1, sandbox="docker")
        ref_db = tmp_path / "local.db"
        result = run_cli("run", str(local), "--store", f"sqlite:///{ref_db}", "-q")
        assert result.returncode == 0, result.stderr
        (tmp_path / "r").mkdir()
        remote = _demo_suite(
            tmp_path / "r",
            4,
            1,
            sandbox="docker",
            executor="ray",
            executor_options={"resources": {"docker_b": 1}},
        )
        db = tmp_path / "ray.db"
        result = run_cli(
            "run",
            str(remote),
            "--ray-address",
            ray_cluster.address,
            "--store",
            f"sqlite:///{db}",
            "-q",
            timeout=600,
        )
        assert result.returncode == 0, result.stderr
        assert _rows(db) == _rows(ref_db)
        image_ids = {row[-1] for row in _rows(db)}
        assert len(image_ids) == 1 and None not in image_ids
        other = docker.DockerClient(base_url=second_docker_daemon, timeout=60)
        try:
            assert other.images.get(image_ids.pop())  # loaded there, same id
            assert not other.containers.list(all=True)  # and nothing left behind
        finally:
            other.close()
    finally:
        ray_cluster.kill("w2")
    # The first daemon's default bridge survived the second daemon.
    assert subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0


def test_local_sandbox_rows_match_local_executor(tmp_path, ray_cluster, suite_writer):
    """No Docker needed: the answer-only suite on the local sandbox, both executors."""
    suite = suite_writer(tmp_path, trials=3, n_tasks=4, concurrency=4)
    rows = {}
    for executor in ("local", "ray"):
        db = tmp_path / f"{executor}.db"
        args = ["run", str(suite), "--executor", executor, "--store", f"sqlite:///{db}", "-q"]
        if executor == "ray":
            args += ["--ray-address", ray_cluster.address]
        result = run_cli(*args, env={"RAY_USAGE_STATS_ENABLED": "0"})
        assert result.returncode == 0, result.stderr
        rows[executor] = _rows(db)
    assert len(rows["local"]) == 2 * 4 * 3
    assert rows["ray"] == rows["local"]


@pytest.mark.docker
@pytest.mark.slow
def test_docker_demo_rows_match_local_executor(tmp_path, ray_cluster, docker_ready):
    suite = _demo_suite(tmp_path, n_tasks=6, trials=2)
    rows, attempts = {}, {}
    for executor in ("local", "ray"):
        db = tmp_path / f"{executor}.db"
        args = ["run", str(suite), "--sandbox", "docker", "--executor", executor]
        args += ["--store", f"sqlite:///{db}", "-q"]
        if executor == "ray":
            args += ["--ray-address", ray_cluster.address]
        result = run_cli(*args, env={"RAY_USAGE_STATS_ENABLED": "0"})
        assert result.returncode == 0, result.stderr
        rows[executor] = _rows(db)
        attempts[executor] = _rows(db, "SELECT outcome, count(*) FROM attempts GROUP BY outcome")
    assert len(rows["local"]) == 2 * 6 * 2
    # same arm, task, trial index, seed, status and pinned image id on every row
    assert rows["ray"] == rows["local"]
    assert all(r[5] and r[5].startswith("sha256:") for r in rows["ray"])
    assert attempts["ray"] == attempts["local"] == [("ok", 24)]


@pytest.mark.docker
@pytest.mark.slow
def test_worker_node_lost_mid_run_loses_nothing(tmp_path, ray_cluster, docker_ready):
    """Kill the only worker node while trials run on it, then start a new one: the run
    finishes with one row per trial; the lost attempts are recorded as infra_error."""
    suite = _demo_suite(tmp_path, n_tasks=6, trials=2, slow_s=4)
    db = tmp_path / "lost.db"
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("HARNESS_STORE", None)
    cmd = [sys.executable, "-m", "harness.cli", "run", str(suite), "--sandbox", "docker"]
    cmd += ["--executor", "ray", "--ray-address", ray_cluster.address]
    cmd += ["--store", f"sqlite:///{db}", "-q"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if not wait_for(lambda: count_trials(db) >= 1, timeout=180):
            proc.kill()
            out, err = proc.communicate(timeout=30)
            raise AssertionError(f"no trial finished: {err.decode()[-3000:]}")
        time.sleep(1.0)  # the next trials are now running on w1
        assert count_trials(db) < 12
        ray_cluster.kill("w1")
        ray_cluster.add_worker("w2", docker=4)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        if "w1" not in ray_cluster.nodes and "w2" not in ray_cluster.nodes:
            ray_cluster.add_worker("w1", docker=4)
    assert proc.returncode == 0, err.decode()[-3000:]
    ray_cluster.wait_docker(4)

    keys = _rows(db, "SELECT arm, task_id, trial_index, variant, status, attempts FROM trials")
    assert len(keys) == 12 == len({k[:4] for k in keys}), keys  # exactly one row per trial
    assert {k[4] for k in keys} == {"passed"}
    attempts = _rows(db, "SELECT task_id, trial_index, attempt, outcome, error FROM attempts")
    lost = [a for a in attempts if a[3] == "infra_error"]
    assert lost, "no attempt was recorded as lost"
    assert all("Error" in (a[4] or "") for a in lost)
    for _arm, task, index, _variant, _status, n in keys:
        mine = [a for a in attempts if a[0] == task and a[1] == index]
        assert [a[2] for a in mine] == list(range(1, n + 1)), mine  # numbered 1..n
        assert [a[3] for a in mine][-1] == "ok" and [a[3] for a in mine].count("ok") == 1
    # the lost trials' containers were removed (the new worker's gc, or the run's own)
    with sqlite3.connect(db) as conn:
        run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
    left = docker_ready.api.containers(all=True, filters={"label": f"harness.run={run_id}"})
    for c in left:
        docker_ready.api.remove_container(c["Id"], force=True)
    assert not left, f"{len(left)} containers of the run left behind"
