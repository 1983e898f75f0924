"""Per-trial cost of grading in a fresh grading sandbox, against in-place grading, side by side.

    python benchmarks/bench_grading.py BASE [--trials 12] [--rounds 2] [--backends docker,bwrap]

BASE is a commit that still graded in the agent's own sandbox (sweep, dump and hidden tests
run there), e.g. the commit before the grading sandbox landed. It is checked out into a
temporary worktree (``git worktree add --detach``); this checkout is the new side. For each
backend and each kind of task — answer-only (no sandbox at all), state-diff (files-kind
state: the new side hashes the agent's archive on the host) and hidden tests (the new side
starts a second, fresh sandbox and copies the work dir in) — the same suite (the oracle on
``--trials`` shell tasks, concurrency 4) runs under BASE then under this checkout, back to
back, ``--rounds`` times, each a whole ``harness run`` process. Each side uses its own task
files (its own hidden tests). Prints seconds per trial for both and the NEW/BASE ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
STATE_TASKS = ("config-port", "config-debug-off", "hosts-remove", "sort-users", "chmod-run")
TEST_TASKS = ("fix-mean", "add-word-count", "json-retries", "backup-script")


def _suite(root: Path, checkout: Path, kind: str, backend: str, trials: int) -> Path:
    """A suite over ``checkout``'s own shell tasks (or answer-only tasks) in ``root``."""
    root.mkdir(parents=True)
    if kind == "answer":
        tasks = [
            {
                "id": f"a{i}",
                "instruction": f"What is {i} + {i}?",
                "graders": [{"type": "answer_match", "mode": "exact", "expected": str(2 * i)}],
                "solution": {"answer": str(2 * i)},
            }
            for i in range(trials)
        ]
        (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
        files, n = [str(root / "tasks.yaml")], 1
    else:
        src = checkout / "tasks/shell/tasks.yaml"
        doc = yaml.safe_load(src.read_text())
        ids = STATE_TASKS if kind == "state" else TEST_TASKS
        doc["tasks"] = [t for t in doc["tasks"] if t["id"].split("/", 1)[1] in ids]
        out = checkout / "tasks/shell" / f".bench-{kind}.yaml"
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        files, n = [str(out)], -(-trials // len(doc["tasks"]))
    suite = {
        "name": f"bench-grading-{kind}",
        "tasks": files,
        "environments_dir": str(checkout / "environments"),
        "sandbox": backend,
        "arms": [{"name": "oracle", "agent": "oracle"}],
        "trials": n,
        "concurrency": 4,
    }
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _run(checkout: Path, suite: Path, db: Path) -> tuple[float, int]:
    """(wall seconds, trials) of one whole ``harness run`` of ``checkout``'s harness."""
    env = {"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "HOME": "/root"}
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(suite),
            "--store",
            f"sqlite:///{db}",
            "-q",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{checkout.name}: run failed ({done.returncode}): {done.stderr[-1500:]}")
    import sqlite3

    with sqlite3.connect(db) as conn:
        n, passed = conn.execute("SELECT count(*), sum(status = 'passed') FROM trials").fetchone()
    if passed != n:
        raise SystemExit(f"{checkout.name}: the oracle failed {n - passed} of {n} trials")
    return wall, n


def main(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    base = work / "base"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), args.base],
        check=True,
        capture_output=True,
    )
    try:
        print(f"{'backend':8} {'tasks':8} {'base s/trial':>13} {'new s/trial':>12} {'new/base':>9}")
        for backend in args.backends.split(","):
            for kind in ("answer", "state", "tests"):
                per: dict[str, list[float]] = {"base": [], "new": []}
                for r in range(args.rounds):
                    for side, checkout in (("base", base), ("new", REPO)):
                        tag = f"{backend}-{kind}-{side}-{r}"
                        suite = _suite(work / tag, checkout, kind, backend, args.trials)
                        wall, n = _run(checkout, suite, work / tag / "r.db")
                        per[side].append(wall / n)
                b, n_ = statistics.median(per["base"]), statistics.median(per["new"])
                print(f"{backend:8} {kind:8} {b:13.3f} {n_:12.3f} {n_ / b:9.2f}", flush=True)
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
            capture_output=True,
        )
        for f in REPO.glob("tasks/shell/.bench-*.yaml"):
            f.unlink()
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="a commit that grades in the agent's own sandbox")
    ap.add_argument("--trials", type=int, default=12, help="trials per suite")
    ap.add_argument("--rounds", type=int, default=2, help="BASE/NEW pairs per measurement")
    ap.add_argument("--backends", default="docker,bwrap")
    raise SystemExit(main(ap.parse_args()))
