"""``limits.cpus`` holds on bwrap: for the trial's sandbox and for a ``module:Class`` agent's
own process in the agent jail (issue 22, point 8). Without a CPU quota either one can take
every core of the host from the other trials. Each side starts two busy processes for 1.5 s
of wall time and reports the CPU time they got over that wall time; under ``cpus: 0.5`` it
must stay near 0.5 (on an idle two-core host it is about 2 without the quota). The check
cannot be fooled by load: a loaded machine only gives the processes less CPU."""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from harness.sandbox import bwrap_limits
from tests.conftest import REPO, run_cli
from tests.integrity.test_agent_jail import _suite
from tests.integrity.test_bwrap_sandbox import require_bwrap
from tests.integrity.test_limits import _require_root
from tests.integrity.test_red_team import assert_nothing_left, harness_tmp

BURN = """
import os, time
start = time.monotonic()
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while time.monotonic() - start < 1.5:
            pass
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
t = os.times()
print(round((t.children_user + t.children_system) / (time.monotonic() - start), 3))
"""

BURNERS = f"""
import shlex, subprocess, sys

from harness.agents import Agent, AgentContext, AgentResult

BURN = {BURN!r}


class Burner(Agent):
    name = "burner"

    async def run(self, ctx: AgentContext) -> AgentResult:
        own = subprocess.run([sys.executable, "-c", BURN], capture_output=True, text=True)
        box = await ctx.sandbox.exec("python3 -c " + shlex.quote(BURN), timeout=60)
        return AgentResult(answer=f"{{own.stdout.strip()}} {{box.stdout.strip()}}")
"""


def test_cpus_caps_the_sandbox_and_the_agents_own_process(tmp_path):
    require_bwrap()
    _require_root()  # cgroups are the harness's to make only as root
    if not bwrap_limits.cpu_quota_applies(bwrap_limits.mechanism()):
        pytest.skip("this host's cgroups have no cpu controller")
    (tmp_path / "burners.py").write_text(BURNERS)
    suite = _suite(tmp_path, "burners:Burner", "bwrap")
    doc = yaml.safe_load(suite.read_text())
    doc["limits"] = {"memory": "512m", "pids": 64, "cpus": 0.5}
    doc["environments_dir"] = str(REPO / "environments")
    suite.write_text(yaml.safe_dump(doc))
    tasks = yaml.safe_load((tmp_path / "tasks.yaml").read_text())
    tasks["tasks"][0]["environment"] = "shell"
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    db, tmp = tmp_path / "r.db", harness_tmp()
    done = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", env={"TMPDIR": str(tmp)})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        ((answer,),) = conn.execute("SELECT answer FROM trials").fetchall()
    own, box = (float(x) for x in answer.split())
    assert 0 < own < 0.8, answer  # 0.5 of a CPU, with the CFS period's slack
    assert 0 < box < 0.8, answer
    assert_nothing_left(tmp)
