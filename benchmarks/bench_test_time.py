"""Test-suite time of two commits, file by file under the same load.

    python benchmarks/bench_test_time.py OLD NEW [--only tests/x/test_y.py ...]
        [--deselect NODEID ...] [--new-only-junit PATH | --skip-new-only]

Issue 13 bounds the suite's growth by 10%, but suites added after the issue was filed grow it
too; comparing the two full runs would charge them to the refactor. So this checks out both
commits into temporary worktrees (``git worktree add --detach``) and, for each test file that
exists in both, runs that file under OLD and then under NEW back to back, so both see the same
machine load. It prints each file's wall time (the whole ``python -m pytest FILE`` process) and
pytest's own junit time (the tests' setup, call and teardown), the NEW/OLD ratio per file and in
total, and the time of the files only NEW has (run here, or summed from an existing junit file).

Each worktree's pytest must import that worktree's own ``harness`` (pytest puts the rootdir
first on sys.path); a one-test probe checks this before any timing and stops if it does not.
The worktrees are removed at the end, also on error. Runs with CI=true (CI-only tests run);
the interop tests find the pinned third-party copies through HARNESS_THIRD_PARTY (default: the
``shared/third_party`` folder beside this clone). Put ``--deselect`` on tests that disturb
other users of the machine (the Docker daemon outage test).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = "test_bench_where_is_harness.py"
PROBE_SRC = """
import harness
from pathlib import Path

def test_where():
    here = Path(__file__).resolve().parents[1]
    print("HARNESS_FROM", harness.__file__)
    assert Path(harness.__file__).resolve().is_relative_to(here), harness.__file__
"""


@dataclass
class FileTime:
    """One test file's run: wall seconds, junit seconds, test counts and pytest's exit code."""

    wall: float
    junit: float
    tests: int
    failed: int
    code: int


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_files(commit: str) -> set[str]:
    """Paths of the pytest files (tests/**/test_*.py) in ``commit``."""
    names = git("ls-tree", "-r", "--name-only", commit, "tests").split()
    return {n for n in names if Path(n).name.startswith("test_") and n.endswith(".py")}


def junit_totals(path: Path) -> tuple[float, int, int]:
    """Sum of testcase times, number of testcases and of failures/errors in a junit file."""
    if not path.exists():
        return 0.0, 0, 0
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    return sum(float(c.get("time", 0)) for c in cases), len(cases), failed


def run_file(tree: Path, rel: str, deselect: list[str], scratch: Path) -> FileTime:
    """Run one test file with pytest in ``tree``; wall time covers start-up and collection."""
    xml = scratch / f"{tree.name}-{rel.replace('/', '_')}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"]
    for node in deselect:
        cmd += ["--deselect", node]
    env = {**os.environ, "CI": "true"}
    env.pop("PYTHONPATH", None)
    # the worktrees live in a temporary folder: point the interop tests at this clone's copies
    env.setdefault("HARNESS_THIRD_PARTY", str(REPO.parent / "shared" / "third_party"))
    start = time.perf_counter()
    proc = subprocess.run(
        [*cmd, rel], cwd=tree, env=env, capture_output=True, text=True, timeout=1800
    )
    wall = time.perf_counter() - start
    junit, tests, failed = junit_totals(xml)
    if proc.returncode not in (0, 5):
        tail = "\n".join(proc.stdout.splitlines()[-5:])
        print(f"  ! {tree.name} {rel}: pytest exit {proc.returncode}\n{tail}", file=sys.stderr)
    return FileTime(wall, junit, tests, failed, proc.returncode)


def check_own_harness(tree: Path) -> str:
    """Run a one-test probe in ``tree``: its pytest must import ``tree``'s own harness."""
    probe = tree / "tests" / PROBE
    probe.write_text(PROBE_SRC)
    try:
        env = {**os.environ}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(probe)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        probe.unlink()
    line = next((x for x in proc.stdout.splitlines() if "HARNESS_FROM" in x), "")
    if proc.returncode != 0:
        sys.exit(f"{tree}: pytest there does not import its own harness:\n{proc.stdout[-2000:]}")
    return line.split("HARNESS_FROM", 1)[1].strip()


def ratio(new: float, old: float) -> str:
    return f"{new / old:6.2f}" if old > 0 else "     -"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--only", nargs="*", default=[], help="limit to these test files")
    ap.add_argument("--deselect", action="append", default=[], help="node id, both commits")
    ap.add_argument("--new-only-junit", type=Path, help="sum new-only files from this junit")
    ap.add_argument("--skip-new-only", action="store_true", help="do not time new-only files")
    args = ap.parse_args()

    old_files, new_files = test_files(args.old), test_files(args.new)
    common = sorted(old_files & new_files)
    new_only = sorted(new_files - old_files)
    if args.only:
        common = [f for f in common if f in args.only]
        new_only = [f for f in new_only if f in args.only]

    with tempfile.TemporaryDirectory(prefix="bench-test-time-") as tmp:
        scratch = Path(tmp)
        trees = {"old": scratch / "old", "new": scratch / "new"}
        try:
            for name, commit in (("old", args.old), ("new", args.new)):
                git("worktree", "add", "--detach", str(trees[name]), commit)
                print(
                    f"{name} {git('rev-parse', '--short', commit).strip()}: harness from "
                    f"{check_own_harness(trees[name])}"
                )
            report(common, new_only, trees, args, scratch)
        finally:
            for tree in trees.values():
                if tree.exists():
                    git("worktree", "remove", "--force", str(tree))


def report(common: list[str], new_only: list[str], trees: dict, args, scratch: Path) -> None:
    """Time the common files old-then-new, print the table, then the new-only total."""
    load0 = os.getloadavg()
    print(f"{'file':55} {'old s':>7} {'new s':>7} {'ratio':>6}  {'junit old':>9} {'new':>7}")
    tot = {"old": 0.0, "new": 0.0, "jold": 0.0, "jnew": 0.0}
    for rel in common:
        old = run_file(trees["old"], rel, args.deselect, scratch)
        new = run_file(trees["new"], rel, args.deselect, scratch)
        flag = "" if old.code in (0, 5) and new.code in (0, 5) else f"  exit {old.code}/{new.code}"
        print(
            f"{rel:55} {old.wall:7.1f} {new.wall:7.1f} {ratio(new.wall, old.wall)}  "
            f"{old.junit:9.1f} {new.junit:7.1f}{flag}",
            flush=True,
        )
        tot["old"] += old.wall
        tot["new"] += new.wall
        tot["jold"] += old.junit
        tot["jnew"] += new.junit
    print(
        f"{'TOTAL common (' + str(len(common)) + ' files)':55} {tot['old']:7.1f} "
        f"{tot['new']:7.1f} {ratio(tot['new'], tot['old'])}  {tot['jold']:9.1f} "
        f"{tot['jnew']:7.1f} {ratio(tot['jnew'], tot['jold'])}"
    )
    load1 = os.getloadavg()
    print(
        f"load average (1/5/15 min) before {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, "
        f"after {load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f}"
    )
    if args.skip_new_only or not new_only:
        print(f"files only in new: {len(new_only)} (not timed)")
        return
    if args.new_only_junit:
        modules = {f[: -len(".py")].replace("/", "."): f for f in new_only}
        total = 0.0
        for case in ET.parse(args.new_only_junit).getroot().iter("testcase"):
            name = case.get("classname", "")
            if name in modules or name.rsplit(".", 1)[0] in modules:
                total += float(case.get("time", 0))
        print(
            f"files only in new: {len(new_only)}, junit total {total:.1f} s "
            f"(from {args.new_only_junit})"
        )
        return
    total = 0.0
    for rel in new_only:
        t = run_file(trees["new"], rel, args.deselect, scratch)
        total += t.wall
        print(f"  new only {rel:55} {t.wall:7.1f}", flush=True)
    print(f"files only in new: {len(new_only)}, wall total {total:.1f} s")


if __name__ == "__main__":
    main()
