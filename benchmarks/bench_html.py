"""Benchmark: the HTML report of a 50,000-trial run, its size and how fast it opens.

    python benchmarks/bench_html.py [--tasks 3334] [--trials 5] [--repeats 5]

Builds a synthetic store (``tests.fixtures.sample_store``: 3 arms × 3,334 tasks × 5 trials =
50,010 trial rows, with costs, confidences, infrastructure errors and a gate policy) by
direct inserts, times ``harness.report.render.html.write_html`` (report data, gate, plots and the
per-task table: 3,334 rows with links) in a fresh process, then opens the file in headless
Chromium (fresh profile, network off; DevTools protocol over a pipe) and reads
DOMContentLoaded from the page's navigation timing, median of ``--repeats`` loads.

Targets: DOMContentLoaded under 3 s on this machine (2 cores); the file under 5 MB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHILD = """
import json, time
t = {{}}
t0 = time.perf_counter()
from harness.analysis.load import DECISIONS, TASK_TABLE, load_run_table
from harness.report.cli import load_report
from harness.store import Store
from harness.report import tasks as tk
from harness.report.html_page import gate_verdict
from harness.report.render.html import render
data = load_report({run!r}, {url!r})
t["load_report"] = time.perf_counter() - t0
store = Store({url!r})
t1 = time.perf_counter()
table = load_run_table(store, {run!r}, TASK_TABLE | DECISIONS, with_notes=True)
rr = tk.task_counts(table.trials, data)
kinds = tk.error_kinds(table.notes)
t["rows"] = time.perf_counter() - t1
t1 = time.perf_counter()
gate = gate_verdict(store, store.get_run({run!r}), table)
t["gate"] = time.perf_counter() - t1
t1 = time.perf_counter()
html = render(data, rr, error_kinds=kinds, gate=gate)
t["render"] = time.perf_counter() - t1
open({out!r}, "w", encoding="utf-8").write(html)
t["total"] = time.perf_counter() - t0
print(json.dumps(t))
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=3334)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to put the store and the report")
    args = parser.parse_args()

    from tests.browser.cdp import Browser, chromium_path
    from tests.fixtures.sample_store import ARMS, build_sample_store

    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-html-"))
    root.mkdir(parents=True, exist_ok=True)
    db, out = root / "store.db", root / "report.html"
    t0 = time.perf_counter()
    run_id = build_sample_store(db, tasks=args.tasks, trials=args.trials, detailed_tasks=20)
    build_s = time.perf_counter() - t0
    n_trials = args.tasks * args.trials * len(ARMS)
    print(
        f"store: {n_trials:,} trials ({len(ARMS)} arms × {args.tasks:,} tasks × {args.trials}) built in {build_s:.1f} s"
    )

    child = CHILD.format(run=run_id, url=f"sqlite:///{db}", out=str(out))
    res = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO, check=True
    )
    t = json.loads(res.stdout.strip().splitlines()[-1])
    size = out.stat().st_size
    print(
        f"report file written in {t['total']:.1f} s (fresh process, imports included): "
        f"load_report {t['load_report']:.1f} s, store rows {t['rows']:.1f} s, "
        f"release gate {t['gate']:.1f} s, render (plots, table) {t['render']:.1f} s"
    )
    print(f"file: {size / 1e6:.2f} MB ({'OK' if size < 5e6 else 'OVER'} the 5 MB target)")

    if not chromium_path():
        print("chromium not found: skipping the load timing (apt-get install -y chromium)")
        return
    dcl, load_end = [], []
    with Browser(width=1400, height=1000) as browser:
        for _ in range(args.repeats):
            page, session = browser.open(out.as_uri(), timeout=60)
            if page.errors:
                raise SystemExit(f"console errors: {page.errors}")
            dcl.append(page.timing["domContentLoadedEventEnd"] / 1000)
            load_end.append(page.timing["loadEventEnd"] / 1000)
            browser.close_tab(session)
    med = statistics.median(dcl)
    print(
        f"DOMContentLoaded: median {med:.2f} s over {args.repeats} loads "
        f"(min {min(dcl):.2f}, max {max(dcl):.2f}; first load is cold) "
        f"{'OK' if med < 3 else 'OVER'} the 3 s target; load event median "
        f"{statistics.median(load_end):.2f} s"
    )
    print(f"files kept in {root}")


if __name__ == "__main__":
    main()
