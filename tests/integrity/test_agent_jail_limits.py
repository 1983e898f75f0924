"""A ``module:Class`` agent's own process runs under the suite's ``limits`` (issue 22,
point 8): it lives on the host, in the agent jail, where the sandbox's limits do not reach.
An agent that allocates four times ``limits.memory`` is killed and fails alone, with the
limit named; one that starts processes without end gets no more than ``limits.pids``; and
nothing of either (processes, cgroups) outlives its trial."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import yaml

from tests.conftest import run_cli
from tests.integrity.test_agent_jail import _sleeps, _suite
from tests.integrity.test_bwrap_sandbox import require_bwrap
from tests.integrity.test_limits import _require_root
from tests.integrity.test_red_team import assert_nothing_left, harness_tmp

HOGS = """
import subprocess

from harness.agents import Agent, AgentContext, AgentResult
from harness.config.models import Options


class HogParams(Options):
    kind: str


class Hog(Agent):
    name = "hog"
    Params = HogParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.params["kind"] == "memory":
            held = b"x" * (1 << 30)
            return AgentResult(answer=str(len(held)))
        started = []
        try:
            for _ in range(200):
                started.append(subprocess.Popen(["sleep", "TAG"]))
        except OSError:
            pass
        return AgentResult(answer=f"started {len(started)}")
"""


def _agent_cgroups() -> list[Path]:
    roots = [Path("/sys/fs/cgroup/harness")]
    roots += [Path(f"/sys/fs/cgroup/{c}/harness") for c in ("pids", "memory")]
    return [d for r in roots if r.is_dir() for d in r.glob("agent-*")]


def _maker_alive(cgroup: Path) -> bool:
    from harness.ownership import pid_alive

    pid = cgroup.name.split("-")[1]
    return pid.isdigit() and pid_alive(int(pid))


def test_the_agents_own_process_runs_under_the_suites_limits(tmp_path):
    require_bwrap()
    _require_root()  # cgroups are the harness's to make only as root
    tag = random.randint(5_000_000, 5_999_999)
    (tmp_path / "hogs.py").write_text(HOGS.replace("TAG", str(tag)))
    suite = _suite(tmp_path, "hogs:Hog", "bwrap", params={"kind": "memory"})
    doc = yaml.safe_load(suite.read_text())
    doc["arms"].append({"name": "b", "agent": "hogs:Hog", "params": {"kind": "pids"}})
    doc["limits"] = {"memory": "256m", "pids": 64}
    suite.write_text(yaml.safe_dump(doc))
    before = set(_agent_cgroups())
    db, tmp = tmp_path / "r.db", harness_tmp()
    done = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", env={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        rows = dict(
            (arm, (status, attempts, reason, answer))
            for arm, status, attempts, reason, answer in conn.execute(
                "SELECT arm, status, attempts, reason, answer FROM trials"
            )
        )
    status, attempts, reason, _ = rows["a"]
    assert (status, attempts) == ("failed", 1), rows["a"]
    assert "went over limits.memory (256m)" in reason, reason
    status, attempts, _, answer = rows["b"]
    assert (status, attempts) == ("failed", 1), rows["b"]
    assert answer.startswith("started ") and int(answer.split()[1]) < 64, answer
    assert _sleeps(tag) == []
    # Scoped to this run: a cgroup is named agent-<pid of the harness that made it>-<hex>,
    # and one whose maker is still alive belongs to another test's run in progress.
    assert {d for d in set(_agent_cgroups()) - before if not _maker_alive(d)} == set()
    assert_nothing_left(tmp)
