"""Export and import sizes and times for a 10,000-trial run.

    python benchmarks/bench_export.py [--tasks 667 --trials 5]   # 3 arms: 10,005 trials

Builds the synthetic sample run (tests/fixtures/sample_store.py: three arms, grader evidence
and trajectories on failed trials), exports it as JSON lines, imports that into a fresh
SQLite store, exports again (must be byte-identical: the round trip is lossless), and writes
the Inspect AI logs; prints sizes and times.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=667)
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from harness.export.inspect import write_inspect
    from harness.export.jsonl import import_jsonl, write_jsonl
    from harness.store import Store
    from tests.fixtures.sample_store import build_sample_store

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db = root / "source.db"
        run_id = build_sample_store(db, tasks=args.tasks, trials=args.trials)
        source = Store(f"sqlite:///{db}")
        out = root / "run.jsonl"
        t = time.perf_counter()
        with out.open("w") as fh:
            n = write_jsonl(source, run_id, fh)
        export_s = time.perf_counter() - t
        copy = Store(f"sqlite:///{root / 'copy.db'}")
        t = time.perf_counter()
        import_jsonl(copy, out)
        import_s = time.perf_counter() - t
        again = root / "again.jsonl"
        with again.open("w") as fh:
            write_jsonl(copy, run_id, fh)
        same = again.read_bytes() == out.read_bytes()
        t = time.perf_counter()
        write_inspect(source, run_id, root / "inspect.json")
        inspect_s = time.perf_counter() - t
        inspect_bytes = sum(p.stat().st_size for p in root.glob("inspect*.json"))
        size = out.stat().st_size
        gz = len(gzip.compress(out.read_bytes()))
        print(f"{n} trials; store {db.stat().st_size / 1e6:.1f} MB (SQLite)")
        print(f"jsonl export: {size / 1e6:.1f} MB ({gz / 1e6:.1f} MB gzipped) in {export_s:.1f} s")
        print(
            f"import-log into a fresh SQLite store: {import_s:.1f} s; re-export identical: {same}"
        )
        print(f"inspect logs (one per arm): {inspect_bytes / 1e6:.1f} MB in {inspect_s:.1f} s")
        source.close()
        copy.close()


if __name__ == "__main__":
    main()
