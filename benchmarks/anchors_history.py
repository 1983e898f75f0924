"""Leave-one-run-out on a real store: runs of the simulated agent, then `harness anchors check`.

Writes a store of RUNS finished runs of a 100-task suite (``build``: two planted systems
per run, written with the store's API), then runs the real `harness anchors check --json`
on it at several n and writes benchmarks/results/anchors_loo.json. The test suite checks the
command on a small store built by real CLI runs (tests/subset/test_anchors_cli.py).

Run: nice -n 10 python -m benchmarks.anchors_history [--runs 30] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "anchors_loo.json"
TASKS = 100
NS = (10, 20, 40)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, check=False
    )


def build(workdir: Path, runs: int, seed: int) -> tuple[Path, str]:
    """The suite file and a store of ``runs`` finished runs of it, written with the store's
    own API (a CLI run per run takes minutes on a loaded machine): two arms per run, each a
    planted system whose per-task success probability is the Beta(a, b) quantile of a
    per-task uniform shared by every system (as the simulated agent plants them), so
    systems agree on which tasks are hard; one trial per task."""
    from datetime import datetime

    from scipy.special import betaincinv

    from harness.config.loader import load_suite
    from harness.store import Run, Store

    rng = np.random.default_rng(seed)
    tasks = [
        {
            "id": f"t{i:03d}",
            "instruction": "say 1",
            "graders": [{"type": "answer_match", "expected": "1"}],
            "solution": {"answer": "1"},
        }
        for i in range(TASKS)
    ]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    arms = [{"name": f"arm{j}", "agent": "simulated"} for j in range(2)]
    suite = {"name": "loo", "seed": 1, "tasks": ["tasks.yaml"], "arms": arms, "sandbox": "local"}
    path = workdir / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    loaded = load_suite(path)
    config = {
        "suite": loaded.suite.model_dump(mode="json"),
        "tasks": {t.task.id: t.task.model_dump(mode="json", by_alias=True) for t in loaded.tasks},
        "environments": {},
    }
    url = f"sqlite:///{workdir / 'history.db'}"
    store = Store(url)
    u = rng.uniform(size=TASKS)
    for r in range(runs):
        when = datetime(2026, 1, 1, tzinfo=UTC).replace(day=1 + r % 28, hour=r // 28)
        run_id = f"loo-{r:03d}"
        store.create_run(
            Run(
                id=run_id,
                suite_name="loo",
                suite_path=str(path),
                config_hash="planted",
                harness_version="benchmark",
                config=config,
                seed=r,
                trials_per_task=1,
                arms=["arm0", "arm1"],
                sandbox="local",
                status="finished",
                started_at=when,
                finished_at=when,
            )
        )
        for arm in ("arm0", "arm1"):
            mean, conc = float(rng.uniform(0.15, 0.85)), float(rng.uniform(1.5, 4.0))
            p = betaincinv(mean * conc, (1 - mean) * conc, u)
            wins = rng.uniform(size=TASKS) < p
            for i, t in enumerate(loaded.tasks):
                ok = bool(wins[i])
                store.write_trial(
                    {
                        "run_id": run_id,
                        "arm": arm,
                        "task_id": t.task.id,
                        "trial_index": 0,
                        "seed": i,
                        "cluster": t.task.cluster_id,
                        "task_class": t.task.class_,
                        "status": "passed" if ok else "failed",
                        "passed": ok,
                        "score": float(ok),
                        "started_at": when,
                        "finished_at": when,
                    }
                )
    store.close()
    return path, url


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="anchors-loo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    suite, store = build(workdir, args.runs, args.seed)
    rows = []
    for n in NS:
        checked = _cli("anchors", "check", str(suite), "--n", str(n), "--store", store, "--json")
        if checked.returncode != 0:
            raise SystemExit(checked.stderr)
        doc = json.loads(checked.stdout)
        rows.append({"n": n, "held_out": len(doc["rows"]), **doc["summary"]})
    OUT.write_text(
        json.dumps(
            {
                "command": f"python -m benchmarks.anchors_history --runs {args.runs} "
                f"--seed {args.seed}",
                "settings": {"runs": args.runs, "tasks": TASKS, "arms_per_run": 2},
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
