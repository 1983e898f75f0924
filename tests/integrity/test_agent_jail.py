"""The agent jail through the real CLI: a ``module:Class`` agent reaches the arm's model
only through its trial's metering proxy (metered, with the harness's key, never its own
way to the upstream); an agent whose module shares a folder with the run's task files is
refused at load; without bubblewrap such agents are refused on isolated backends and run
as a plain process on ``unsafe-local``. The red team (``test_red_team*.py``) holds the
probes of what a jailed agent cannot reach."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import REPO, run_cli
from tests.fakes.openai_server import FakeOpenAI, completion
from tests.integrity.test_bwrap_sandbox import require_bwrap
from tests.integrity.test_red_team import assert_nothing_left, harness_tmp

KEY = "sk-jail-test-real-key"

ASKER = """
import httpx

from harness.agents import Agent, AgentContext, AgentResult
from harness.config.models import Options
from harness.models import ChatClient


class AskerParams(Options):
    upstream: str = ""


class Asker(Agent):
    name = "asker"
    Params = AskerParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        reply = await ChatClient(ctx.model).chat([{"role": "user", "content": ctx.instruction}])
        try:
            httpx.get(ctx.params["upstream"] + "/v1/models", timeout=5)
            direct = "reached the upstream"
        except httpx.HTTPError as exc:
            direct = f"error: {type(exc).__name__}"
        return AgentResult(answer=reply.content, info={"direct": direct})
"""


def _suite(folder: Path, agent: str, sandbox: str, **arm: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tasks = [
        {
            "id": "jail/ask",
            "instruction": "What is the word?",
            "graders": [{"type": "answer_match", "mode": "exact", "expected": "pineapple"}],
        }
    ]
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "jail",
        "tasks": ["tasks.yaml"],
        "sandbox": sandbox,
        "arms": [{"name": "a", "agent": agent, **arm}],
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_jailed_agent_reaches_the_model_only_through_its_proxy(tmp_path):
    require_bwrap()
    (tmp_path / "asker.py").write_text(ASKER)
    with FakeOpenAI() as upstream:
        upstream.push(completion("pineapple", usage=(30, 4)))
        model = {"name": "fake-model", "base_url": upstream.base_url, "api_key_env": "JAIL_KEY"}
        suite = _suite(
            tmp_path, "asker:Asker", "bwrap", model=model, params={"upstream": upstream.url}
        )
        db = tmp_path / "j.db"
        tmp = harness_tmp()
        done = run_cli(
            "run",
            str(suite),
            "--store",
            f"sqlite:///{db}",
            "-q",
            env={"JAIL_KEY": KEY, "TMPDIR": str(tmp)},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        chats = upstream.chat_requests()
    assert len(chats) == 1
    assert chats[0].headers["authorization"] == f"Bearer {KEY}"  # the proxy's call
    with sqlite3.connect(db) as conn:
        status, tokens_in, tokens_out, calls, evidence = conn.execute(
            "SELECT status, tokens_in, tokens_out, model_calls, evidence FROM trials"
        ).fetchone()
    assert (status, tokens_in, tokens_out, calls) == ("passed", 30, 4, 1)
    assert json.loads(evidence)["info"]["direct"].startswith("error")
    assert_nothing_left(tmp)


def test_agent_beside_the_task_files_is_refused(tmp_path):
    require_bwrap()
    pkg = tmp_path / "project"
    (pkg / "agents").mkdir(parents=True)
    (pkg / "agents" / "__init__.py").write_text("")
    (pkg / "agents" / "asker.py").write_text(ASKER)
    suite = _suite(pkg / "agents" / "suite", "agents.asker:Asker", "bwrap")
    done = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path / 'r.db'}", cwd=pkg)
    assert done.returncode == 2, done.stderr[-2000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "arms[0].agent" in line and "tasks.yaml" in line and "keep agent modules" in line
    assert "Traceback" not in done.stderr


def _no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with what the harness needs but no ``bwrap``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("setpriv", "bash", "sh", "python3"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    return str(bin_dir)


def test_without_bubblewrap_isolated_backends_refuse_and_unsafe_local_runs_plain(tmp_path):
    (tmp_path / "asker.py").write_text(
        "from harness.agents import Agent, AgentResult\n\n\nclass Plain(Agent):\n"
        "    name = 'plain'\n\n    async def run(self, ctx):\n"
        "        return AgentResult(answer='pineapple')\n"
    )
    env = {"PATH": _no_bwrap_path(tmp_path)}
    for sandbox in ("bwrap", "docker"):
        suite = _suite(tmp_path, "asker:Plain", sandbox)
        done = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path / 'r.db'}", env=env)
        assert done.returncode == 2, (sandbox, done.stderr[-2000:])
        line = done.stderr.strip().splitlines()[-1]
        assert "arms[0].agent" in line and "bubblewrap" in line, line
        assert "--sandbox unsafe-local" in line
    suite = _suite(tmp_path, "asker:Plain", "unsafe-local")
    done = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path / 'p.db'}", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no agent jail" in done.stderr


def _jail_processes(tmp: Path) -> tuple[list[int], list[int]]:
    """(the jail's init, its other processes: the template and the trials' processes) of
    the jail made under the harness temporary directory ``tmp``."""
    ps = subprocess.run(["ps", "-wweo", "pid,ppid,args"], capture_output=True, text=True).stdout
    lines = [line.split(None, 2) for line in ps.splitlines()[1:]]
    bwrap = {pid for pid, _ppid, args in lines if args.startswith("bwrap") and str(tmp) in args}
    inits = {pid for pid, ppid, args in lines if ppid in bwrap and args.startswith("bwrap")}
    inside = sorted(int(pid) for pid, ppid, _args in lines if ppid in inits)
    return sorted(int(pid) for pid in inits), inside


SLEEPER = """
import asyncio, os, subprocess

from harness.agents import Agent, AgentResult


class Sleeper(Agent):
    name = 'sleeper'

    async def run(self, ctx):
        tag = TAG + ctx.task_id.endswith('quick')
        subprocess.Popen(['sleep', str(tag)], start_new_session=True)
        if os.fork() == 0:  # a double fork into a session of its own
            os.setsid()
            if os.fork() == 0:
                os.execvp('sleep', ['sleep', str(tag)])
            os._exit(0)
        if not ctx.task_id.endswith('quick'):
            await asyncio.sleep(SLOW_S)
        return AgentResult(answer='pineapple')
"""


def _sleeper(tmp_path: Path, tag: int, quick: bool = False) -> Path:
    """A suite whose agent detaches two ``sleep TAG`` processes (a new session, a double
    fork) and sleeps 6 s; with ``quick``, 20 s, and a second task whose agent detaches two
    ``sleep TAG+1`` and returns at once."""
    slow_s = "20" if quick else "6"  # with quick: long enough to outlast the quick trial
    (tmp_path / "sleeper.py").write_text(SLEEPER.replace("TAG", str(tag)).replace("SLOW_S", slow_s))
    suite = _suite(tmp_path, "sleeper:Sleeper", "bwrap")
    doc = yaml.safe_load(suite.read_text())
    doc["retries"] = {"max_attempts": 2, "backoff_s": 0.1}
    doc["concurrency"] = 2
    suite.write_text(yaml.safe_dump(doc))
    if quick:
        tasks = yaml.safe_load((tmp_path / "tasks.yaml").read_text())
        tasks["tasks"].append({**tasks["tasks"][0], "id": "jail/quick"})
        (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    return suite


def _start(suite: Path, db: Path, tmp: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "harness.cli", "run", str(suite), "--store", f"sqlite:///{db}"]
    return subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


def _when_a_trial_runs(run: subprocess.Popen, tmp: Path, tag: int) -> tuple[list[int], list[int]]:
    """The jail's processes (as ``_jail_processes``) once the agent's turn runs (its
    detached ``sleep TAG`` is up; the load-time check's process runs no agent)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        if _sleeps(tag):
            time.sleep(0.5)
            return _jail_processes(tmp)
        time.sleep(0.2)
    return [], []


def _sleeps(tag: int) -> list[str]:
    ps = subprocess.run(["ps", "-wweo", "args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if line.strip() == f"sleep {tag}"]


def test_a_jail_that_dies_under_a_trial_is_infrastructure(tmp_path):
    """The jail killed from outside while an agent runs (its init, so every process in it
    dies): the attempt is an infrastructure error, retried in a new jail, never the agent's
    failure; nothing of the first jail is left."""
    require_bwrap()
    tag = random.randint(4_000_000, 4_999_999)
    db, tmp = tmp_path / "r.db", harness_tmp()
    run = _start(_sleeper(tmp_path, tag), db, tmp)
    inits, _inside = _when_a_trial_runs(run, tmp, tag)
    assert inits, run.communicate(timeout=300)[1][-2000:]
    os.kill(inits[0], signal.SIGKILL)
    _out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    with sqlite3.connect(db) as conn:
        trial = conn.execute("SELECT status, attempts FROM trials").fetchone()
        outcomes = [r[0] for r in conn.execute("SELECT outcome FROM attempts ORDER BY id")]
    assert trial == ("passed", 2), (trial, outcomes)
    assert outcomes == ["infra_error", "ok"], outcomes
    assert _sleeps(tag) == []
    assert_nothing_left(tmp)


def test_detached_processes_die_with_their_trial_and_the_jail_with_the_harness(tmp_path):
    """(1) A trial's detached processes (``setsid``, a double fork) die when its trial
    ends, while the jail and another trial live on. (2) The harness killed (SIGKILL) while
    an agent runs: bwrap dies with its parent (``--die-with-parent``), the template sees
    its control socket close, and every process in the jail dies. Before the jail, both
    kinds of detached process outlived their trial and the killed harness."""
    require_bwrap()
    tag = random.randint(4_000_000, 4_999_999)
    db, tmp = tmp_path / "r.db", harness_tmp()
    run = _start(_sleeper(tmp_path, tag, quick=True), db, tmp)
    _when_a_trial_runs(run, tmp, tag)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _finished(db, "jail/quick"):
        time.sleep(0.2)
    assert _finished(db, "jail/quick"), "the quick trial did not finish"
    time.sleep(0.5)
    assert len(_sleeps(tag)) == 2, "the slow trial's processes should still run"
    assert _sleeps(tag + 1) == [], "the quick trial's detached processes outlived it"
    assert run.poll() is None
    run.kill()
    run.communicate(timeout=60)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (_sleeps(tag) or any(_jail_processes(tmp))):
        time.sleep(0.2)
    assert _sleeps(tag) == []
    assert _jail_processes(tmp) == ([], [])
    for spool in tmp.iterdir():  # the harness was killed: its spool stays (gc is for that)
        shutil.rmtree(spool)
    assert_nothing_left(tmp)


def _finished(db: Path, task: str) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            row = conn.execute("SELECT 1 FROM trials WHERE task_id = ?", (task,)).fetchone()
    except sqlite3.OperationalError:  # the run has not made its tables yet
        return False
    return row is not None
