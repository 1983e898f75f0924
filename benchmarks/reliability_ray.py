"""The Ray row of the reliability table: the only worker node killed (SIGKILL of its
``ray start`` and everything under it) while trials run on it, a new node started, and the
faulted run compared row by row with an uninterrupted run of the same seed on the local
executor. The cluster is two loopback nodes of this machine (``tests/cluster/conftest.py``);
only this run's containers are touched.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks.reliability import Row, _count, _harness, _run_id, compared_row
from benchmarks.reliability_docker import _demo_suite, _remove_left, _wait


def ray_worker_lost(work: Path, n_tasks: int = 12) -> Row:
    """Kill the worker once a trial has finished on it; every trial must still end with
    exactly one row and the reference's verdict, the cut attempts recorded as infra_error."""
    from tests.cluster.conftest import RayCluster, _ray_cli

    if _ray_cli() is None:
        row = Row("ray_worker_lost", trials=0)
        row.detail = {"skipped": "ray is not installed (pip install -e '.[dev]' brings it)"}
        return row
    suite = _demo_suite(work / "ray", n_tasks, trials=2)
    clean = work / "ray-clean.db"
    exits = [_harness("run", str(suite), "--store", f"sqlite:///{clean}", "-q").wait()]
    (work / "ray-nodes").mkdir()
    cluster = RayCluster(work / "ray-nodes")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    db, run_id, cut_after = work / "ray.db", None, None
    try:
        cluster.start_head()
        cluster.add_worker("w1", docker=4)
        cluster.wait_docker(4)
        proc = _harness(
            "run", str(suite), "--executor", "ray", "--ray-address", cluster.address,
            "--store", f"sqlite:///{db}", "-q",
        )  # fmt: skip
        finished = "SELECT count(*) FROM trials"
        _wait(lambda: _count(db, finished) >= 1 or proc.poll() is not None, 300)
        run_id = _run_id(db)
        cut_after = _count(db, finished)
        if proc.poll() is None:
            time.sleep(1.0)  # the next trials are on w1 now
            cluster.kill("w1")
            cluster.add_worker("w2", docker=4)
        exits.append(proc.wait(timeout=900))
    finally:
        for name in list(cluster.nodes):  # only this cluster's nodes: never `ray stop`,
            cluster.kill(name)  # which would end every Ray cluster on the machine
        _remove_left(run_id)
    return compared_row(
        "ray_worker_lost", 2 * n_tasks, exits, db, clean, killed_after_trials=cut_after
    )
