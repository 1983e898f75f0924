"""Time from a broken model endpoint to the end of ``harness run``: a closed port as
``base_url`` (the probe's case) and an upstream that answers the probe but fails every call
(the breaker's case), each with 80 trials planned (20 answer-only tasks × 4 trials, one
``llm`` arm, the suite's default retries and concurrency), through the real CLI.

Run: python benchmarks/bench_endpoints.py   (prints seconds, exit code, stderr lines)
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.openai_server import FakeOpenAI, error  # noqa: E402


def suite(tmp: Path, base_url: str) -> Path:
    tasks = [
        {
            "id": f"q{i:02d}",
            "instruction": "2+2?",
            "graders": [{"type": "answer_match", "expected": "4"}],
        }
        for i in range(20)
    ]
    (tmp / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    model = {"name": "fake-model", "base_url": base_url, "api_key_env": None}
    doc = {"name": "endpoints", "trials": 4, "tasks": ["tasks.yaml"]}
    doc["arms"] = [{"name": "llm", "agent": "llm", "model": model}]
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run(label: str, base_url: str, *flags: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        start = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(suite(tmp, base_url)),
                *flags,
                "--store",
                f"sqlite:///{tmp}/s.db",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        seconds = time.monotonic() - start
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    print(
        f"{label} {' '.join(flags)}: {seconds:.1f} s, exit {done.returncode}, {len(lines)} stderr lines"
    )
    for line in lines[:4]:
        print(f"    {line[:160]}")


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run("closed port", f"http://127.0.0.1:{port}/v1")
    with FakeOpenAI(default=error(503, "overloaded")) as server:
        run("every call 503", server.base_url)
        run("every call 503", server.base_url, "-q")


if __name__ == "__main__":
    main()
