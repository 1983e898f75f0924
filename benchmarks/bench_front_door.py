"""Every command-line mistake and every malformed config, through the real CLI, timed.

    python benchmarks/bench_front_door.py

Runs each case of the config corpus (``tests/cli/config_corpus.py``) as ``harness run SUITE``
and each usage mistake below as a subprocess, and reports the cases, the exit codes seen,
how many printed exactly one line, and the slowest case (the bar: one line, exit 2, < 2 s).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.cli.config_corpus import all_cases, write_case  # noqa: E402

USAGE = [
    ["--bogus"],
    ["no-such-command"],
    ["run", "--trials", "abc", "s.yaml"],
    ["run", "--bogus"],
    ["report", "--bogus"],
    ["runs", "--bogus"],
    ["validate"],
    ["validate", "--bogus", "s.yaml"],
    ["compare"],
    ["gate"],
    ["gate", "RUN", "--bogus"],
    ["history"],
    ["plan", "--alpha", "x"],
    ["lock"],
    ["gc", "--bogus"],
    ["html", "--bogus"],
    ["view", "--port", "x"],
]


def harness(args: list[str], cwd: Path) -> tuple[int, str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return p.returncode, p.stderr, time.perf_counter() - t0


def summarise(title: str, results: list[tuple[str, int, str, float]]) -> None:
    codes = collections.Counter(r[1] for r in results)
    # one line: the config error itself; a usage error is the library's one "Error:" line
    # after its usage line and its pointer to --help
    one_line = sum(
        1
        for r in results
        if len(r[2].strip().splitlines()) == 1
        or (sum(ln.startswith("Error:") for ln in r[2].splitlines()) == 1 and "help" in r[2])
    )
    slowest = max(results, key=lambda r: r[3])
    print(
        f"{title}: {len(results)} cases; exit codes {dict(codes)}; "
        f"one-line stderr {one_line}/{len(results)}; "
        f"max {slowest[3]:.2f} s ({slowest[0]}); median "
        f"{sorted(r[3] for r in results)[len(results) // 2]:.2f} s"
    )
    for name, code, err, _ in results:
        if code != 2 or "Traceback" in err:
            print(f"  UNEXPECTED {name}: exit {code}: {err.strip()[:200]}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        usage = []
        for argv in USAGE:
            code, err, dt = harness(argv, root)
            usage.append((" ".join(argv), code, err, dt))
        summarise("usage errors", usage)
        configs = []
        for case in all_cases():
            suite = write_case(case, root / case.name)
            store = f"sqlite:///{root}/{case.name}.db"
            code, err, dt = harness(["run", str(suite), "--store", store, "-q"], root)
            configs.append((case.name, code, err, dt))
        summarise("config corpus", configs)


if __name__ == "__main__":
    main()
