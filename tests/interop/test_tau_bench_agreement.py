"""The harness's verdict on imported tau-bench tasks equals tau-bench's own reward.

For every task of both domains' test splits and every constructed trajectory kind
(tau_support.KINDS: noop, oracle and seven kinds of wrong or tricky trajectory), the harness
verdict (the imported task's graders, the environment's tool specs, AgentContext's episode
rules) must equal tau-bench's reward. tau-bench's reward for all of them is a checked-in
fixture written by make_tau_rewards.py with tau-bench's own code; this test recomputes a
seeded sample of it from the pinned checkout, and runs another seeded sample end to end
through `harness run` (sandbox, tool server, store).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from graders import build_grader, combine
from graders.base import Evidence
from harness.agents.base import AgentContext
from harness.config.loader import load_environment, load_task_file
from harness.config.models import Arm, Budgets
from harness.errors import EpisodeEnded
from tests.fakes.openai_server import FakeOpenAI
from tests.interop.tau_support import (
    DOMAINS,
    KINDS,
    REPO,
    checkout_or_skip,
    tau_env,
    tau_reward,
    trajectory,
)

FIXTURE = Path(__file__).parent / "fixtures" / "tau_bench_rewards.json"
REWARDS: dict[str, dict[str, list[float]]] = json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def imported(tau_import) -> dict[str, Any]:
    out, done = tau_import
    result: dict[str, Any] = {"out": out}
    for domain in DOMAINS:
        name = f"tau-bench-{domain}"
        env = load_environment(out / "environments", name, done[domain].suite)
        files = env.files_dir
        assert files is not None
        dump = subprocess.run(
            [sys.executable, "-S", str(files / "tau_runner.py"), "dump"],
            capture_output=True,
            check=True,
        )
        tasks = load_task_file(out / "tasks" / name / "tasks.yaml")
        result[domain] = {
            "env": env,
            "tasks": [t.task for t in tasks],
            "s0": pickle.dumps(json.loads(dump.stdout)),
        }
    return result


def _runner(files: Path):
    spec = importlib.util.spec_from_file_location("tau_runner_under_test", files / "tau_runner.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


class RecordingServer:
    """Stands in for the tool server during the episode: records each call that the
    episode rules let through (AgentContext stops at a terminating tool). The trajectories
    are fixed in advance, so the calls' outputs cannot change what happens next, and the
    final state is a function of the recorded calls alone."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    async def call(self, tool: str, args: dict, timeout: float) -> tuple[bool, str]:
        self.calls.append((tool, dict(args)))
        return True, "recorded"


class HarnessVerdicts:
    """The harness's verdicts for one domain: AgentContext's tool and episode rules, the
    recorded calls run by the environment's runner (``invoke``, the function the sandboxed
    server runs) on the checkout's tool classes (byte-identical to the environment's copies,
    checked below), then the imported task's own graders on (s0, final state, messages).
    Final states and state verdicts are memoized per distinct call sequence: both are pure
    functions of it (most kinds share the gold sequence)."""

    def __init__(self, env, runner, table, s0: bytes):
        self.env, self.runner, self.table, self.s0 = env, runner, table, s0
        self.initial = pickle.loads(s0)
        self._finals: dict[str, Any] = {}
        self._state_verdicts: dict[tuple[str, str, int], Any] = {}
        self._task: str | None = None

    def _final(self, calls: list[tuple[str, dict]]) -> tuple[str, Any]:
        key = json.dumps(calls, sort_keys=True)
        if key not in self._finals:
            data = pickle.loads(self.s0) if calls else self.initial
            for tool, args in calls:
                self.runner.invoke(self.table, data, tool, dict(args))
            self._finals[key] = data
        return key, self._finals[key]

    def verdict(self, task, steps: list[dict]) -> bool:
        if task.id != self._task:  # one task's states at a time
            self._finals.clear()
            self._task = task.id

        async def go() -> bool:
            named = {f.name for f in dataclasses.fields(AgentContext)}
            server = RecordingServer()
            ctx = AgentContext(
                **({"task": task} if "task" in named else {"task_id": task.id}),
                arm=Arm(name="replay", agent="noop"),
                instruction="",
                sandbox=None,  # type: ignore[arg-type] - every tool call goes to the server
                environment=self.env,
                seed=0,
                budgets=Budgets(max_steps=1000, timeout_s=None),
                tool_server=server,
            )
            answer = None
            try:
                for step in steps:
                    if step["name"] == "final_answer":
                        answer = step["kwargs"]["content"]
                    elif step["name"] == "respond":
                        ctx.say(step["kwargs"]["content"])
                    else:
                        await ctx.call_tool(step["name"], step["kwargs"])
            except EpisodeEnded:
                pass
            key, final = self._final(server.calls)
            evidence = Evidence(
                task=task,
                answer=answer,
                messages=[e.content or "" for e in ctx.trajectory.events if e.kind == "message"],
                trajectory=ctx.trajectory.events,
                initial_state=self.initial,
                final_state=final,
            )
            verdicts = []
            for i, spec in enumerate(task.graders):
                memo = (task.id, key, i) if spec.type == "state_diff" else None
                if memo is not None and memo in self._state_verdicts:
                    verdicts.append(self._state_verdicts[memo])
                    continue
                verdict = await build_grader(spec).grade(evidence)
                if memo is not None:
                    self._state_verdicts[memo] = verdict
                verdicts.append(verdict)
            return combine(verdicts).passed

        return anyio.run(go)


def _steps(domain: str, index: int, kind: str) -> list[dict]:
    env = tau_env(domain)
    task = env.tasks[index]
    actions = [a.model_dump() for a in task.actions]
    return trajectory(kind, actions, task.outputs, set(env.terminate_tools))


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_task_every_kind_agrees(imported, domain: str) -> None:
    d = imported[domain]
    env = d["env"]
    runner = _runner(env.files_dir)
    tau = tau_env(domain)
    table = {cls.get_info()["function"]["name"]: cls for cls in tau.tools_map.values()}
    for name in table:  # the environment runs byte-identical copies of these modules
        module = sys.modules[table[name].__module__]
        copy = env.files_dir / Path(*module.__name__.split(".")).with_suffix(".py")
        assert copy.read_bytes() == Path(module.__file__).read_bytes(), name
    assert len(d["tasks"]) == len(tau.tasks)
    harness = HarnessVerdicts(env, runner, table, d["s0"])
    counts: Counter[tuple[str, str]] = Counter()
    disagree = []
    for i, task in enumerate(d["tasks"]):
        for kind in KINDS:
            verdict = harness.verdict(task, _steps(domain, i, kind))
            reward = REWARDS[domain][kind][i]
            counts[(kind, "agree" if verdict == (reward == 1.0) else "disagree")] += 1
            if verdict != (reward == 1.0):
                disagree.append((kind, i, verdict, reward))
    summary = {k: f"{counts[(k, 'agree')]}/{len(d['tasks'])}" for k in KINDS}
    print(f"\n{domain} agreement by kind: {summary}")
    assert not disagree, f"{domain}: harness verdict != tau-bench reward: {disagree[:10]}"


def test_sample_of_fixture_matches_tau_bench_live() -> None:
    """The fixture is tau-bench's reward: recompute a seeded sample with its own code."""
    checkout_or_skip()
    rng = random.Random(17)
    for domain in DOMAINS:
        n = len(tau_env(domain).tasks)
        for kind in KINDS:
            for i in rng.sample(range(n), 1):
                assert tau_reward(domain, i, _steps(domain, i, kind)) == REWARDS[domain][kind][i], (
                    domain,
                    kind,
                    i,
                )


def test_sample_end_to_end_through_harness_run(imported, tmp_path) -> None:
    """A seeded sample of (task, kind) through the CLI: unsafe-local sandbox, the tool
    server, state snapshots, graders, the store; each row's verdict equals the reward.

    The imported tasks name a model-backed simulated user, whose endpoint the run probes
    before it starts: it is a local scripted server here. The replay agent never asks the
    user anything, so the server is asked for its model list and nothing else."""
    rng = random.Random(2024)
    with FakeOpenAI() as user_server:
        _end_to_end(imported, tmp_path, rng, user_server.base_url)
    assert user_server.model_requests() == [], "the replay agent never talks to the user"
    assert any(r.path.rstrip("/").endswith("/models") for r in user_server.requests)


def _end_to_end(imported, tmp_path: Path, rng: random.Random, user_url: str) -> None:
    out: Path = imported["out"]
    store = tmp_path / "runs.db"
    expected: dict[tuple[str, str], float] = {}
    for domain in DOMAINS:
        tau = tau_env(domain)
        ending = set(tau.terminate_tools)
        with_transfer = [
            i for i, t in enumerate(tau.tasks) if any(a.name in ending for a in t.actions)
        ]
        picks = sorted({rng.choice(with_transfer), rng.randrange(len(tau.tasks))})
        name = f"tau-bench-{domain}"
        source = yaml.safe_load((out / "tasks" / name / "tasks.yaml").read_text())
        sample = {**source, "tasks": [source["tasks"][i] for i in picks]}
        (out / "tasks" / name / "sample.yaml").write_text(yaml.safe_dump(sample, sort_keys=False))
        arms = []
        for kind in KINDS:
            steps = {}
            for i in picks:
                task_id = source["tasks"][i]["id"]
                steps[task_id] = _steps(domain, i, kind)
                expected[(kind, task_id)] = REWARDS[domain][kind][i]
            arms.append(
                {"name": kind, "agent": "replay_agent:ReplayAgent", "params": {"steps": steps}}
            )
        suite = {
            "name": f"{name}-sample",
            "tasks": ["sample.yaml"],
            "environments_dir": "../../environments",
            "sandbox": "unsafe-local",
            "concurrency": 2,
            "arms": arms,
            "budgets": {"max_steps": 100, "timeout_s": 120},
        }
        path = out / "tasks" / name / "sample-suite.yaml"
        path.write_text(yaml.safe_dump(suite, sort_keys=False))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), str(Path(__file__).parent)]),
            "TAU_USER_BASE_URL": user_url,
        }
        proc = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(path), "-q"]
            + ["--store", f"sqlite:///{store}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert proc.returncode in (0, 1), proc.stderr[-2000:]
    rows = sqlite3.connect(store).execute("select arm, task_id, status, reason from trials")
    seen = 0
    for arm, task_id, status, reason in rows:
        seen += 1
        assert status in ("passed", "failed"), (arm, task_id, status, reason)
        assert (status == "passed") == (expected[(arm, task_id)] == 1.0), (arm, task_id, reason)
    assert seen == len(expected)
