"""Concurrent access to one store: no process's access may cost another process's writes.

    python benchmarks/store_concurrency.py [--iterations 100] [--backend sqlite|postgresql|both]
                                           [--seed 1] [--json out.json]

Each iteration is one fresh store (a SQLite file, or a new database on a throwaway
PostgreSQL 15 server) and, at once, real processes doing what users do while a run writes:

- ``harness run`` (the main run), from before the store exists;
- a second ``harness run`` of another suite on the same store, started a seeded moment later;
- ``harness report`` over and over, and ``harness runs`` over and over;
- ``harness view`` serving pages (every run's page, trial list, one trial, its report);
- a plain connection (``sqlite3`` / ``psycopg``) opening the store, reading, holding it open a
  seeded while and closing it, in a loop: the access that lost whole stores before the fix.

After all of them exit, it checks: each run exited 0 and its summary line counted every
planned trial; each run's row is ``finished`` and holds exactly those trials (no lost row, no
duplicate); SQLite's ``integrity_check`` is ``ok``; every other process exited as documented
(``report`` and ``runs``: 0, or 2 "no harness store here" / "no runs yet" before the first
run row; ``view`` and the plain loop: 0) and never printed a traceback or a "disk I/O error"; every page answered 200.

Prints one line per iteration and a summary: stores with lost rows, runs not ``finished``,
exit codes per process kind. The test suite recomputes a seeded sample
(``tests/faults/test_store_concurrency.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(
    r"run id: (\S+)\s+\((\d+) of (\d+) trials finished this session, (\d+) unresolved\)"
)

# The plain connection loop, as its own process: open, read, hold, close; until SIGTERM.
PLAIN_LOOP = r"""
import random, signal, sys, time
url, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
stop = False
def _stop(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, _stop)
if url.startswith("sqlite"):
    import sqlite3
    path = url.split("///", 1)[1]
    connect, missing = (lambda: sqlite3.connect(path)), ("no such table",)
    errors = (sqlite3.Error,)
else:
    import psycopg
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    connect, missing = (lambda: psycopg.connect(dsn)), ("does not exist",)
    errors = (psycopg.Error,)
opened = 0
while not stop:
    conn = connect()
    opened += 1
    try:
        conn.execute("SELECT count(*) FROM trials").fetchone()
    except errors as exc:
        if not any(m in str(exc) for m in missing):
            print(f"plain connection: {exc}", file=sys.stderr)
            sys.exit(1)
        if not url.startswith("sqlite"):
            conn.rollback()
    time.sleep(rng.choice((0.0, 0.0, 0.05, 0.3)))
    conn.close()
    time.sleep(rng.uniform(0.0, 0.03))
print(f"opened {opened}")
"""


@dataclass
class Iteration:
    backend: str
    seed: int
    seconds: float = 0.0
    lost: int = 0
    """Trials a run counted as finished that its store does not hold (summed over runs)."""
    not_finished: int = 0
    """Runs whose row is not ``finished`` afterwards."""
    exits: Counter = field(default_factory=Counter)
    """(process kind, exit code) → processes."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)
    return env


def _harness(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _suite(root: Path, name: str, rng: random.Random) -> tuple[Path, int]:
    """An answer-only suite of simulated agents that takes a few seconds; (path, trials)."""
    root.mkdir(parents=True, exist_ok=True)
    n_tasks, trials = rng.randint(3, 6), 2
    tasks = [
        {
            "id": f"{name}-t{i}",
            "instruction": f"What is {i} + {i}?",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2 * i}],
            "solution": {"answer": str(2 * i)},
        }
        for i in range(n_tasks)
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    delay = round(rng.uniform(0.05, 0.25), 3)
    suite = {
        "name": name,
        "seed": rng.randint(1, 10**6),
        "trials": trials,
        "tasks": ["tasks.yaml"],
        "arms": [
            {"name": "a", "agent": "simulated", "params": {"p": 0.6, "delay_s": delay}},
            {"name": "b", "agent": "simulated", "params": {"p": 0.7, "delay_s": delay}},
        ],
        "concurrency": 4,
        "sandbox": "unsafe-local",
    }
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path, n_tasks * trials * 2


def _check_output(kind: str, err: str, it: Iteration) -> None:
    if "Traceback" in err or "disk I/O error" in err or "internal error" in err:
        it.problems.append(f"{kind}: {err.strip().splitlines()[-1][:200]}")


class _Poller(threading.Thread):
    """One harness command, run again and again (one process at a time) until stopped,
    then once more after the runs ended: that last read must see the finished store."""

    def __init__(self, kind: str, args: list[str], cwd: Path, it: Iteration) -> None:
        super().__init__(daemon=True)
        self.kind, self.args, self.cwd, self.it = kind, args, cwd, it
        self.stop = threading.Event()

    def run(self) -> None:
        while True:
            last = self.stop.is_set()
            out, err = (proc := _harness(*self.args, cwd=self.cwd)).communicate(timeout=300)
            code = proc.returncode
            self.it.exits[(self.kind, code)] += 1
            _check_output(self.kind, err, self.it)
            # Before the first run row, a reading command says so and exits 2 (the store
            # or its tables do not exist yet); afterwards it must always succeed.
            early = code == 2 and not last and ("no runs yet" in err or "no harness store" in err)
            if code != 0 and not early:
                self.it.problems.append(f"{self.kind} exited {code}: {err.strip()[-200:]}")
            if last:
                return
            self.stop.wait(0.3)  # polling every 0.3 s, as a watching user's loop does


class _Viewer(threading.Thread):
    """``harness view`` on the store, and a client fetching its pages until stopped."""

    def __init__(self, store: str, cwd: Path, it: Iteration, port: int) -> None:
        super().__init__(daemon=True)
        self.it, self.port, self.store, self.cwd = it, port, store, cwd
        self.proc: subprocess.Popen | None = None
        self.stop = threading.Event()
        self.pages = 0

    def _get(self, path: str) -> str | None:
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:
                self.pages += 1
                return resp.read().decode()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            error = body[body.find("Traceback") :].split("</pre>", 1)[0].strip().splitlines()
            self.it.problems.append(f"view {path}: HTTP {exc.code} {(error or [''])[-1][:200]}")
        except OSError:
            if self.proc is not None and self.proc.poll() is not None:
                self.it.problems.append(f"view exited {self.proc.returncode} while serving")
                self.stop.set()
        return None

    def run(self) -> None:
        # A user opens the viewer on a store that exists (`harness view` refuses one that
        # does not, exit 2): from the first run row on, while the runs write.
        while not self.stop.is_set() and not _has_runs(self.store):
            time.sleep(0.05)
        self.proc = _harness("view", "--store", self.store, "--port", str(self.port), cwd=self.cwd)
        rounds = 0
        while not self.stop.is_set():
            home = self._get("/")
            for run_id in sorted(set(re.findall(r'href="/run/([^"/]+)"', home or ""))):
                self._get(f"/run/{run_id}")
                trials = self._get(f"/run/{run_id}/trials") or ""
                for trial in re.findall(r'href="/trial/(\d+)"', trials)[:1]:
                    self._get(f"/trial/{trial}")
                if rounds % 4 == 1:  # the full report page costs the most: now and then
                    self._get(f"/run/{run_id}/report")
            rounds += 1
            time.sleep(0.2)

    def finish(self) -> None:
        self.stop.set()
        self.join()
        if self.proc is None:
            self.it.problems.append("view never started: no run row appeared")
            return
        deadline = time.monotonic() + 120  # a loaded machine may still be starting it
        while self.pages == 0 and self.proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=60).close()
                self.pages += 1
            time.sleep(0.1)
        home = self._get("/")  # after the runs: every run's page still answers
        for run_id in sorted(set(re.findall(r'href="/run/([^"/]+)"', home or ""))):
            self._get(f"/run/{run_id}")
        self.proc.send_signal(signal.SIGINT)  # Ctrl-C, as `harness view` says
        _, err = self.proc.communicate(timeout=60)
        self.it.exits[("view", self.proc.returncode)] += 1
        _check_output("view", err, self.it)
        if self.proc.returncode != 0:
            self.it.problems.append(f"view exited {self.proc.returncode}: {err.strip()[-200:]}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _has_runs(url: str) -> bool:
    from sqlalchemy import create_engine, text

    if url.startswith("sqlite") and not os.path.isfile(url.split("///", 1)[1]):
        return False
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return bool(conn.execute(text("SELECT count(*) FROM runs")).scalar())
    except Exception:  # noqa: BLE001 - no store or no tables yet
        return False
    finally:
        engine.dispose()


def _stored(url: str, suite: str) -> tuple[str | None, int, int]:
    """(run status, trials stored, distinct trial keys stored) of the run of ``suite``."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    params = {"s": suite}
    try:
        with engine.connect() as conn:
            status = conn.execute(text("SELECT status FROM runs WHERE suite_name = :s"), params)
            trials = "FROM trials JOIN runs ON runs.id = trials.run_id WHERE suite_name = :s"
            n = conn.execute(text(f"SELECT count(*) {trials}"), params)
            keys = conn.execute(
                text(
                    f"SELECT count(*) FROM (SELECT DISTINCT arm, task_id, trial_index {trials}) k"
                ),
                params,
            )
            return status.scalar(), int(n.scalar() or 0), int(keys.scalar() or 0)
    except Exception:  # noqa: BLE001 - no store or no tables: nothing was kept
        return None, 0, 0
    finally:
        engine.dispose()


def iteration(backend: str, seed: int, store: str, work: Path) -> Iteration:
    """One iteration on the fresh, not yet created store ``store``."""
    rng = random.Random(seed)
    it = Iteration(backend, seed)
    t0 = time.monotonic()
    first, planned_first = _suite(work / "first", "first", rng)
    second, planned_second = _suite(work / "second", "second", rng)
    second_after = rng.uniform(0.0, 1.5)
    plain = subprocess.Popen(
        [sys.executable, "-c", PLAIN_LOOP, store, str(seed)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pollers = [
        _Poller("report", ["report", "--store", store, "-q"], work, it),
        _Poller("runs", ["runs", "--store", store], work, it),
    ]
    runs = [(_harness("run", str(first), "--store", store, "-q", cwd=work), planned_first)]
    viewer = _Viewer(store, work, it, _free_port())
    for p in pollers:
        p.start()
    viewer.start()
    time.sleep(second_after)
    runs.append((_harness("run", str(second), "--store", store, "-q", cwd=work), planned_second))
    for (proc, planned), name in zip(runs, ("first", "second"), strict=True):
        _, err = proc.communicate(timeout=600)
        it.exits[("run", proc.returncode)] += 1
        _check_output("run", err, it)
        if proc.returncode != 0:
            it.problems.append(f"run {name} exited {proc.returncode}: {err.strip()[-300:]}")
        match = SUMMARY.search(err)
        if match is None:
            it.problems.append(f"run {name} printed no summary")
        elif (int(match[2]), int(match[3])) != (planned, planned):
            it.problems.append(f"run {name}: {match[2]} of {match[3]} finished, {planned} planned")
    for p in pollers:
        p.stop.set()
    viewer.finish()
    for p in pollers:
        p.join()
    plain.send_signal(signal.SIGTERM)
    _, err = plain.communicate(timeout=60)
    it.exits[("plain", plain.returncode)] += 1
    if plain.returncode != 0:
        it.problems.append(f"plain connection loop exited {plain.returncode}: {err.strip()}")
    # Every trial of both suites finishes (simulated agents never crash), so each run's row
    # must be there, finished, holding exactly its planned trials, whatever the run printed.
    for name, planned in (("first", planned_first), ("second", planned_second)):
        status, stored, keys = _stored(store, name)
        if stored < planned:
            it.lost += planned - stored
            it.problems.append(f"run {name}: {planned} trials planned, {stored} stored")
        if stored != keys:
            it.problems.append(f"run {name}: {stored - keys} duplicated trial rows")
        if status != "finished":
            it.not_finished += 1
            it.problems.append(f"run {name} is {status!r}, not 'finished'")
    if backend == "sqlite":
        path = store.split("///", 1)[1]
        with contextlib.closing(sqlite3.connect(path)) as conn:
            check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            it.problems.append(f"integrity_check: {check}")
    it.seconds = time.monotonic() - t0
    return it


@contextlib.contextmanager
def _stores(backend: str) -> Iterator[tuple[callable, callable]]:
    """(make a fresh store URL in a directory, drop it) for ``backend``."""
    if backend == "sqlite":
        yield (lambda work: f"sqlite:///{work / 'store.db'}"), (lambda url: None)
        return
    sys.path.insert(0, str(REPO))
    from tests.pgserver import ThrowawayPostgres

    server = ThrowawayPostgres()
    try:
        yield (lambda work: server.new_database()), server.drop_database
    finally:
        server.close()


def series(backend: str, iterations: int, seed: int, echo: bool = True) -> list[Iteration]:
    """``iterations`` seeded iterations on ``backend``; one line each when ``echo``."""
    out: list[Iteration] = []
    with _stores(backend) as (make, drop):
        for i in range(iterations):
            with tempfile.TemporaryDirectory(prefix="store-conc-") as tmp:
                url = make(Path(tmp))
                try:
                    it = iteration(backend, seed * 100_003 + i, url, Path(tmp))
                finally:
                    drop(url)
            out.append(it)
            if echo:
                verdict = "ok" if it.ok else "FAIL " + "; ".join(it.problems)[:400]
                codes = " ".join(f"{k}:{c}x{n}" for (k, c), n in sorted(it.exits.items()))
                print(
                    f"{backend} {i + 1}/{iterations} seed {it.seed} {it.seconds:.1f}s "
                    f"lost {it.lost} exits [{codes}] {verdict}",
                    flush=True,
                )
    return out


def summary(results: list[Iteration]) -> dict:
    exits: Counter = Counter()
    for it in results:
        exits.update(it.exits)
    return {
        "iterations": len(results),
        "failed_iterations": sum(not it.ok for it in results),
        "stores_with_lost_rows": sum(it.lost > 0 for it in results),
        "lost_rows": sum(it.lost for it in results),
        "runs_not_finished": sum(it.not_finished for it in results),
        "exit_codes": {f"{kind} {code}": n for (kind, code), n in sorted(exits.items())},
        "seconds_per_iteration": round(sum(it.seconds for it in results) / max(1, len(results)), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the summaries here")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    table = {b: summary(series(b, args.iterations, args.seed)) for b in backends}
    for backend, row in table.items():
        print(f"\n{backend}: {json.dumps(row, indent=1)}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n")
    sys.exit(0 if all(r["failed_iterations"] == 0 for r in table.values()) else 1)


if __name__ == "__main__":
    main()
