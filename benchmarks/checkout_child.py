"""Run a measuring script in a fresh Python process against one checkout of the harness,
for benchmarks that put two checkouts (say this one and ``/work/main``) side by side."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_in(root: Path, script: str, *args: str, timeout: float = 1800) -> dict:
    """``python -c script args`` with ``root`` as the working dir and on the path; the last
    line it prints, read as JSON (``{"error": ...}`` when it failed)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/local/bin:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])
