"""Hostile and broken input: huge or non-UTF-8 tool output, a hanging tool, malformed tool
calls, path traversal, a locked or read-only store. Each gets a clear result, nothing lost."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import anyio
import pytest
import yaml

from harness.agents.base import AgentContext
from harness.config.models import Arm, Budgets, EnvironmentSpec, Task, ToolSpec
from harness.sandbox.base import Environment, SandboxRequest
from harness.sandbox.local import LocalProvider
from harness.sandbox.output import OUTPUT_LIMIT
from harness.store import Run, Store, now
from harness.trajectory import RESULT_PREVIEW_CHARS
from tests.conftest import run_cli, write_suite

TOOLS = [
    ToolSpec(
        name="huge", description="5 MB of output", command="python3 -c \"print('x' * 5_000_000)\""
    ),
    ToolSpec(
        name="binary",
        description="bytes that are not UTF-8",
        command="printf 'ok \\xff\\xfe\\x80 end'",
    ),
    ToolSpec(name="hang", description="never returns", command="sleep 600", timeout_s=1.0),
]


def _context(tmp_path: Path):
    env = Environment(EnvironmentSpec(name="hostile", tools=TOOLS), tmp_path)
    task = Task.model_validate(
        {"id": "t", "instruction": "x", "graders": [{"type": "answer_match", "expected": "1"}]}
    )

    async def make():
        sandbox = await LocalProvider().create(SandboxRequest(env, None))
        return AgentContext(
            task_id=task.id,
            arm=Arm(name="a", agent="noop"),
            instruction="x",
            sandbox=sandbox,
            environment=env,
            seed=1,
            budgets=Budgets(),
        )

    return make


def test_tool_output_hostile_cases(tmp_path):
    async def main():
        ctx = await _context(tmp_path)()
        try:
            huge = await ctx.call_tool("huge", {})
            binary = await ctx.call_tool("binary", {})
            start = time.monotonic()
            hang = await ctx.call_tool("hang", {})
            hang_s = time.monotonic() - start
            unknown = await ctx.call_tool("rm_rf_slash", {"path": "/"})
            bad_args = await ctx.call_tool("binary", ["not", "a", "mapping"])  # type: ignore[arg-type]
            with pytest.raises(PermissionError):
                await ctx.sandbox.read_file("../../../../etc/passwd")
            with pytest.raises(PermissionError):
                await ctx.sandbox.write_file("../escape.txt", b"x")
        finally:
            await ctx.sandbox.destroy()
        return ctx, huge, binary, hang, hang_s, unknown, bad_args

    ctx, huge, binary, hang, hang_s, unknown, bad_args = anyio.run(main)
    events = ctx.trajectory.events
    # huge output: the sandbox keeps its first and last 512 KiB and says how much was cut;
    # the trajectory keeps a preview and the kept text by reference
    assert huge.ok and OUTPUT_LIMIT < len(huge.output) < OUTPUT_LIMIT + 300
    assert "bytes of output not kept" in huge.output and huge.output.rstrip().endswith("x")
    assert len(events[0].content) < RESULT_PREVIEW_CHARS + 200 and events[0].blob_ref
    assert ctx.trajectory.blobs[events[0].blob_ref].decode() == huge.output
    # non-UTF-8 bytes are kept as escapes (lossless), never fatal
    assert binary.ok and binary.output == "ok \\xff\\xfe\\x80 end"
    # a hanging tool is killed at its own timeout and reported to the agent
    assert not hang.ok and "timed out" in hang.output and hang_s < 10
    # malformed calls are fed back and counted, never raised
    assert not unknown.ok and "unknown tool" in unknown.output
    assert not bad_args.ok and ctx.usage.malformed_tool_calls == 2
    # and all of it can be stored: the blob round-trips through the store
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.create_run(
        Run(
            id="r",
            suite_name="s",
            suite_path="",
            config_hash="",
            harness_version="",
            config={},
            seed=1,
            trials_per_task=1,
            arms=["a"],
            sandbox="local",
            started_at=now(),
        )
    )
    trial = {
        "run_id": "r",
        "arm": "a",
        "task_id": "t",
        "trial_index": 0,
        "seed": 1,
        "cluster": "t",
        "task_class": "default",
        "status": "failed",
        "passed": False,
        "started_at": now(),
        "finished_at": now(),
    }
    tid = store.write_trial(trial, [], [e.model_dump() for e in events], ctx.trajectory.blobs)
    stored = store.events(tid)
    assert stored[0].blob_ref == events[0].blob_ref
    assert store.blob(events[0].blob_ref) == ctx.trajectory.blobs[events[0].blob_ref]


def test_locked_store_waits_and_loses_nothing(tmp_path):
    suite = write_suite(tmp_path, n_tasks=6, trials=2)
    db = tmp_path / "locked.db"
    Store(f"sqlite:///{db}")  # create the schema
    holder = sqlite3.connect(db, timeout=30, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock...
    release = threading.Timer(3.0, holder.rollback)  # ...for three seconds
    release.start()
    result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    release.join()
    holder.close()
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] == 24


def test_read_only_store_is_one_line_exit_5(tmp_path):
    import subprocess

    db = tmp_path / "ro.db"
    Store(f"sqlite:///{db}")
    if os.geteuid() == 0:  # root ignores permission bits: make the file immutable instead
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not supported on this file system")
        undo = ["chattr", "-i", str(db)]
    else:
        db.chmod(0o444)
        undo = ["chmod", "644", str(db)]
    try:
        suite = write_suite(tmp_path / "s")
        result = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    finally:
        subprocess.run(undo, capture_output=True)
    assert result.returncode == 5, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "store" in lines[0] and "readonly" in lines[0].replace("-", "")


def test_unreachable_store_is_one_line_exit_5(tmp_path):
    suite = write_suite(tmp_path)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for url in ("postgresql://user:hunter2@127.0.0.1:1/none", f"sqlite:///{not_a_dir}/x.db"):
        result = run_cli("run", str(suite), "--store", url, "-q")
        assert result.returncode == 5, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot open the store" in lines[0]
        assert "hunter2" not in result.stderr and "Traceback" not in result.stderr


def test_report_shows_unresolved_share_by_class(tmp_path):
    env = tmp_path / "environments" / "broken"
    env.mkdir(parents=True)
    (env / "environment.yaml").write_text(yaml.safe_dump({"name": "broken", "setup": ["exit 1"]}))
    tasks = [
        {
            "id": f"t{i}",
            "instruction": "Say 1.",
            "class": "fragile" if i < 2 else "solid",
            "environment": "broken" if i < 2 else None,
            "graders": [{"type": "answer_match", "expected": "1"}],
            "solution": {"answer": "1"},
        }
        for i in range(4)
    ]
    tasks = [{k: v for k, v in t.items() if v is not None} for t in tasks]
    suite = write_suite(
        tmp_path / "s", task_list=tasks, trials=1, arms=[{"name": "o", "agent": "oracle"}]
    )
    url = f"sqlite:///{tmp_path / 'u.db'}"
    assert run_cli("run", str(suite), "--store", url, "-q").returncode == 3
    import json

    data = json.loads(run_cli("report", "--json", "--store", url).stdout)
    by_class = {r["name"]: r for r in data["arms"]["o"]["infra"]["unresolved_by_class"]}
    assert by_class["fragile"]["unresolved"] == 2 and by_class["fragile"]["estimate"] == 1.0
    assert by_class["solid"]["unresolved"] == 0
    text = run_cli("report", "--section", "unresolved", "--store", url).stdout
    assert "unresolved share by class" in text and "fragile 2/2" in text
