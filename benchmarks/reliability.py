"""Reliability figures: faults injected into real `harness run` processes, each faulted run
compared row by row with an uninterrupted run of the same seed.

    python benchmarks/reliability.py [--kills 25] [--outages 5,10,20] [--memory-trials 20000]
                                     [--seed 2026] [--json benchmarks/results/reliability.json]
    python benchmarks/reliability.py --sample     # the small seeded sample CI recomputes
                                                  # (2 kills, 200 trials, no PostgreSQL)

Scenarios (each a table row):

- ``sigkill``: a 96-trial suite run to the end once (the reference), then again with SIGKILL
  at ``--kills`` seeded random moments, each followed by ``--resume``: trials lost,
  duplicated, verdicts changed against the reference; attempts recorded as ``driver_died``
  (one per trial the kills cut, counted by the resume from the in-flight marks).
- ``postgres_stop_Ns``: a PostgreSQL server (``tests/pgserver.py``) stopped for N s mid-run,
  then started again: the run waits for it (``store_outage_s`` 60) and finishes, exit 0.
- ``postgres_terminated``: every connection of the run's database terminated mid-run (as a
  failover does): the writer reconnects; exit 0.
- ``postgres_past_window``: the server stopped for longer than a 3 s window: exit 5, one
  line; the resume (server back) finishes the run with the reference's verdicts.
- ``memory``: one run of ``--memory-trials`` trials; the driver's resident memory and its
  trials per second, first quarter against last quarter of the run.

- ``docker_kill``: ``--docker-kills`` containers of a Docker run killed (``docker kill``) at
  seeded moments (``benchmarks/reliability_docker.py``): lost, duplicated, changed against
  a clean run; each kill an ``infra_error`` attempt, retried.
- ``docker_pause``: a container's cgroup frozen mid-exec: seconds from the freeze to the
  run's exit against the bound (budget plus the exec, restart and removal limits of
  ``harness.sandbox.docker_calls``). Needs root; otherwise the row says why it was skipped.

- ``ray_worker_lost``: the only Ray worker node of a two-node loopback cluster killed
  (SIGKILL of the node and its processes) while trials run on it, a new node started
  (``benchmarks/reliability_ray.py``): lost, duplicated, changed against a clean run on the
  local executor; the cut attempts recorded as ``infra_error``.

``--only docker`` or ``--only ray`` runs just those rows and, with ``--json``, replaces them
in the file.

The full output is checked in (``--json benchmarks/results/reliability.json``); the test
suite recomputes ``--sample`` live (``tests/faults/test_reliability.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the tests' suite writer and PostgreSQL server
KEY = "arm, task_id, trial_index, variant"


@dataclass
class Row:
    scenario: str
    trials: int
    lost: int = 0
    duplicated: int = 0
    changed: int = 0
    exits: list[int] = field(default_factory=list)
    detail: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Nothing lost, duplicated or changed; every attempt a kill cut is recorded."""
        died = self.detail.get("driver_died_attempts", self.detail.get("attempts_cut"))
        return (
            not (self.lost or self.duplicated or self.changed)
            and (died == self.detail.get("attempts_cut"))
            and self.detail.get("within_bound", True)
        )


def _suite(root: Path, n_tasks: int, trials: int, delay_s: float, **extra: object) -> Path:
    """Two simulated arms on ``n_tasks`` answer tasks (the tests' suite, seeded)."""
    from tests.conftest import write_suite

    arms = [
        {"name": "base", "agent": "simulated", "params": {"p": 0.5, "delay_s": delay_s}},
        {"name": "cand", "agent": "simulated", "params": {"p": 0.7, "delay_s": delay_s}},
    ]
    return write_suite(
        root, n_tasks=n_tasks, seed=7, trials=trials, arms=arms, concurrency=4, **extra
    )


def _harness(*args: str, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    env.pop("HARNESS_STORE", None)
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


def _rows(url: str) -> list[tuple]:
    """(arm, task, trial index, variant, passed) of every trial row of the store's runs."""
    from harness.store import Store

    store = Store(url)
    try:
        return [
            (t.arm, t.task_id, t.trial_index, t.variant, t.passed)
            for run in store.list_runs()
            for t in store.trials(run.id)
        ]
    finally:
        store.close()


def _compare(row: Row, got: list[tuple], reference: list[tuple]) -> Row:
    ref = {r[:4]: r[4] for r in reference}
    keys = [r[:4] for r in got]
    row.duplicated = len(keys) - len(set(keys))
    row.lost = len(set(ref) - set(keys))
    row.changed = sum(1 for r in got if r[:4] in ref and ref[r[:4]] != r[4])
    return row


def compared_row(scenario: str, trials: int, exits: list[int], db: Path, clean: Path, **detail):
    """The row of a faulted run ``db`` against its clean run ``clean``, with the faulted
    run's ``infra_error`` attempts beside ``detail``."""
    infra = _count(db, "SELECT count(*) FROM attempts WHERE outcome = 'infra_error'")
    row = Row(scenario, trials=trials, exits=exits)
    row.detail = {**detail, "infra_error_attempts": infra}
    return _compare(row, _rows(f"sqlite:///{db}"), _rows(f"sqlite:///{clean}"))


def _run_id(db: Path) -> str | None:
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
        found = conn.execute("SELECT id FROM runs").fetchone()
        return found[0] if found else None
    return None


def _owner(db: Path) -> int | None:
    return _count(db, "SELECT pid FROM runs") or None


def _cut(db: Path) -> set[tuple]:
    """In-flight marks (with their start) of trials that have no final row."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
        return set(
            conn.execute(
                f"SELECT {KEY}, started_at FROM trials_in_flight m WHERE NOT EXISTS (SELECT 1 "
                "FROM trials t WHERE t.run_id = m.run_id AND t.arm = m.arm AND t.task_id = "
                "m.task_id AND t.trial_index = m.trial_index AND t.variant = m.variant)"
            ).fetchall()
        )
    return set()


def _count(db: Path, sql: str) -> int:
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
        found = conn.execute(sql).fetchone()
        return int(found[0]) if found and found[0] is not None else 0
    return 0


def sigkill_series(work: Path, kills: int, seed: int) -> Row:
    """SIGKILL at seeded moments, each followed by --resume, against the reference run."""
    suite = _suite(work / "suite", n_tasks=12, trials=4, delay_s=0.05)
    clean = work / "clean.db"
    exits = [_harness("run", str(suite), "--store", f"sqlite:///{clean}", "-q").wait()]
    db = work / "killed.db"
    rng = random.Random(seed)
    row = Row("sigkill", trials=96)
    done, cut = 0, set()
    while done < kills:
        run_id = _run_id(db)
        args = ["--resume", run_id] if run_id else [str(suite)]
        proc = _harness("run", *args, "--store", f"sqlite:///{db}", "-q")
        deadline = time.monotonic() + 120
        # a seeded moment after this process owns the run row (start-up takes seconds)
        while _owner(db) != proc.pid and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.5))
        if proc.poll() is not None:
            exits.append(proc.returncode)
            break  # it finished before the kill
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        exits.append(-9)
        done += 1
        cut |= _cut(db)  # marks of trials without a final row: each an attempt cut
    run_id = _run_id(db)
    if run_id:
        exits.append(_harness("run", "--resume", run_id, "--store", f"sqlite:///{db}", "-q").wait())
    row.exits = exits
    died = _count(db, "SELECT count(*) FROM attempts WHERE outcome = 'driver_died'")
    row.detail = {
        "kills": done,
        "attempts_cut": len(cut),
        "driver_died_attempts": died,
    }
    return _compare(row, _rows(f"sqlite:///{db}"), _rows(f"sqlite:///{clean}"))


class _Collect:
    """A run's stderr lines, read as they come."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.lines = proc, []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stderr or ():
            self.lines.append(line.rstrip("\n"))


def _wait_rows(url: str, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(Exception):
            if len(_rows(url)) >= n:
                return
        time.sleep(0.1)


def postgres_series(work: Path, outages: list[float]) -> list[Row]:
    from tests.pgserver import ThrowawayPostgres

    pg = ThrowawayPostgres()
    try:
        suite = _suite(work / "pg", n_tasks=8, trials=2, delay_s=0.3, store_outage_s=60)
        ref_url = pg.new_database()
        _harness("run", str(suite), "--store", ref_url, "-q").wait()
        reference = _rows(ref_url)
        out = []
        for seconds in outages:
            url = pg.new_database()
            proc = _harness("run", str(suite), "--store", url, stderr=subprocess.PIPE)
            lines = _Collect(proc)
            _wait_rows(url, 2, proc)
            pg.stop()
            time.sleep(seconds)
            pg.start()
            code = proc.wait(timeout=600)
            row = Row(f"postgres_stop_{seconds:g}s", trials=32, exits=[code])
            row.detail = {"notes": [x for x in lines.lines if x.startswith("store ")]}
            out.append(_compare(row, _rows(url), reference))
        url = pg.new_database()
        proc = _harness("run", str(suite), "--store", url, "-q")
        _wait_rows(url, 2, proc)
        terminated = pg.terminate_connections(url)
        row = Row("postgres_terminated", trials=32, exits=[proc.wait(timeout=600)])
        row.detail = {"connections_terminated": terminated}
        out.append(_compare(row, _rows(url), reference))
        out.append(_past_window(pg, work, reference))
        return out
    finally:
        pg.close()


def _past_window(pg, work: Path, reference: list[tuple]) -> Row:
    suite = _suite(work / "pg-window", n_tasks=8, trials=2, delay_s=0.3, store_outage_s=3)
    url = pg.new_database()
    proc = _harness("run", str(suite), "--store", url, "-q", stderr=subprocess.PIPE)
    lines = _Collect(proc)
    _wait_rows(url, 2, proc)
    pg.stop()
    t0 = time.monotonic()
    code = proc.wait(timeout=600)
    took = time.monotonic() - t0
    lines.thread.join(timeout=10)
    pg.start()
    run_id = _latest_run_id(url)
    resumed = _harness("run", "--resume", run_id, "--store", url, "-q").wait()
    row = Row("postgres_past_window", trials=32, exits=[code, resumed])
    row.detail = {"stderr_lines": len(lines.lines), "seconds_to_exit": round(took, 1)}
    return _compare(row, _rows(url), reference)


def _latest_run_id(url: str) -> str:
    from harness.store import Store

    store = Store(url)
    try:
        run = store.latest_run()
        assert run is not None
        return run.id
    finally:
        store.close()


def _rss_kb(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) the process has used so far."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


def memory_run(work: Path, n_trials: int) -> Row:
    """One long run: resident memory, trials per second and CPU per trial by quarter (the
    CPU figure holds when other jobs load the machine; trials per second does not)."""
    tasks = 50
    suite = _suite(work / "mem", n_tasks=tasks, trials=max(1, n_trials // (2 * tasks)), delay_s=0)
    db = work / "mem.db"
    proc = _harness("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    samples: list[tuple[int, int]] = []  # (trials stored, rss kB)
    cpu: list[tuple[int, float]] = []  # (trials stored, CPU seconds)
    while proc.poll() is None:
        rss, used = _rss_kb(proc.pid), _cpu_s(proc.pid)
        if rss is not None and used is not None:
            stored = _count(db, "SELECT count(*) FROM trials")
            samples.append((stored, rss))
            cpu.append((stored, used))
        time.sleep(0.5)
    total = _count(db, "SELECT count(*) FROM trials")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        ends = sorted(r[0] for r in conn.execute("SELECT finished_at FROM trials"))
    quarter = max(1, len(ends) // 4)

    def rate(chunk: list[str]) -> float:
        from datetime import datetime

        span = (
            datetime.fromisoformat(chunk[-1]) - datetime.fromisoformat(chunk[0])
        ).total_seconds()
        return round((len(chunk) - 1) / span, 1) if span > 0 else 0.0

    # Memory while trials run: up to the first sample with every trial stored (the report
    # the run prints at its end reads them all; its peak is in rss_mb_max).
    done = next((i for i, (n, _) in enumerate(samples) if n >= total), len(samples) - 1)
    running = samples[: done + 1]
    by_quarter = [
        [rss for n, rss in running if q * total / 4 <= n <= (q + 1) * total / 4] for q in range(4)
    ]
    row = Row("memory", trials=total, exits=[proc.returncode])
    row.lost = 2 * tasks * max(1, n_trials // (2 * tasks)) - total
    row.detail = {
        "rss_mb_median_by_quarter": [
            round(statistics.median(q) / 1024, 1) if q else None for q in by_quarter
        ],
        "rss_mb_max": round(max(rss for _, rss in samples) / 1024, 1) if samples else None,
        "rss_mb_max_while_running": (
            round(max(rss for _, rss in running) / 1024, 1) if running else None
        ),
        "trials_per_s_first_quarter": rate(ends[:quarter]),
        "trials_per_s_last_quarter": rate(ends[-quarter:]),
        "cpu_ms_per_trial_by_quarter": _cpu_by_quarter(cpu, total),
    }
    return row


def _cpu_by_quarter(cpu: list[tuple[int, float]], total: int) -> list[float | None]:
    """Milliseconds of the run's CPU per stored trial, in each quarter of the trials: from
    the first sample at or past the quarter's start to the first at or past its end (so
    start-up before the first trial and the report after the last are left out)."""
    out: list[float | None] = []
    for q in range(4):
        lo, hi = q * total / 4, (q + 1) * total / 4
        start = next(((n, t) for n, t in cpu if n >= max(lo, 1)), None)
        end = next(((n, t) for n, t in cpu if n >= hi), None)
        if start is None or end is None or end[0] <= start[0]:
            out.append(None)
            continue
        out.append(round(1000 * (end[1] - start[1]) / (end[0] - start[0]), 2))
    return out


def measure(
    kills: int,
    outages: list[float] | None,
    memory_trials: int,
    seed: int,
    docker_kills: int | None = None,
    only: str | None = None,
    ray: bool = False,
) -> list[Row]:
    """Every scenario's row; ``outages`` None: no PostgreSQL scenarios; ``docker_kills``
    None: no Docker scenarios; ``only``: just the ``docker``, ``ray`` or ``memory`` rows."""
    with tempfile.TemporaryDirectory(prefix="harness-reliability-") as tmp:
        work = Path(tmp)
        rows = []
        if only is None:
            rows.append(sigkill_series(work / "kill", kills, seed))
            if outages is not None:
                rows += postgres_series(work, outages)
        if only in (None, "memory"):
            rows.append(memory_run(work, memory_trials))
        if docker_kills is not None and only in (None, "docker"):
            from benchmarks.reliability_docker import docker_kill, docker_pause

            rows += [docker_kill(work, docker_kills, seed), docker_pause(work)]
        if (ray and only is None) or only == "ray":
            from benchmarks.reliability_ray import ray_worker_lost

            rows.append(ray_worker_lost(work))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--outages", default="5,10,20", help="seconds, comma-separated")
    parser.add_argument("--memory-trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-postgres", dest="postgres", action="store_false")
    parser.add_argument("--docker-kills", type=int, default=4)
    parser.add_argument("--no-docker", dest="docker", action="store_false")
    parser.add_argument("--no-ray", dest="ray", action="store_false")
    parser.add_argument("--only", choices=["docker", "ray", "memory"], help="run only these rows")
    parser.add_argument("--sample", action="store_true", help="the small sample CI recomputes")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if args.sample:
        args.kills, args.outages, args.memory_trials, args.postgres = 2, "", 200, False
        args.docker = args.ray = False
    outages = [float(x) for x in args.outages.split(",") if x]
    t0 = time.monotonic()
    rows = measure(
        args.kills,
        outages if args.postgres else None,
        args.memory_trials,
        args.seed,
        docker_kills=args.docker_kills if args.docker or args.only else None,
        only=args.only,
        ray=args.ray,
    )
    for r in rows:
        print(
            f"{r.scenario:24} trials {r.trials:5}  lost {r.lost}  duplicated {r.duplicated}  "
            f"changed {r.changed}  exits {r.exits}  {json.dumps(r.detail)}"
        )
    doc = {
        "command": " ".join(["python", "benchmarks/reliability.py", *sys.argv[1:]]),
        "seconds": round(time.monotonic() - t0),
        "rows": [{**asdict(r), "ok": r.ok} for r in rows],
    }
    if args.json and args.only and args.json.exists():
        old = json.loads(args.json.read_text())
        names = {r["scenario"] for r in doc["rows"]}
        kept = [r for r in old["rows"] if r["scenario"] not in names]
        doc = {**old, "rows": kept + doc["rows"], f"{args.only}_command": doc["command"]}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    sys.exit(0 if all(r.ok for r in rows) else 1)


if __name__ == "__main__":
    main()
