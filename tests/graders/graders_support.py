"""Helpers for grader tests: load task files and run one real trial in a LocalSandbox.

The lead's config loader will replace ``load_tasks``; until then tasks are read with
``yaml.safe_load`` and validated with ``Task.model_validate`` (a ``{defaults, tasks}`` file
merges each task over the defaults, key by key).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from graders import build_grader
from graders.base import Evidence, Verdict
from harness.agents.base import AgentContext, AgentResult, ReferenceContext
from harness.config.models import Arm, Budgets, EnvironmentSpec, Task
from harness.errors import EpisodeEnded
from harness.grading import install_in_place
from harness.sandbox.base import Environment, SandboxRequest, snapshot_state
from harness.sandbox.local import LocalProvider

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks"
ENVIRONMENTS = ROOT / "environments"


@dataclass
class LoadedTask:
    task: Task
    file: Path

    @property
    def hidden_dir(self) -> Path | None:
        return (self.file.parent / self.task.hidden) if self.task.hidden else None


def load_tasks(path: Path) -> list[LoadedTask]:
    data = yaml.safe_load(path.read_text())
    if isinstance(data, dict) and "tasks" in data:
        defaults = data.get("defaults", {})
        raw = [{**defaults, **t} for t in data["tasks"]]
    else:
        raw = [data]
    return [LoadedTask(Task.model_validate(r), path) for r in raw]


def task_files(folder: str) -> list[Path]:
    """The task files of a folder (suite files, which declare ``arms``, are skipped)."""
    out = []
    for p in sorted((TASKS / folder).glob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        if isinstance(data, dict) and "arms" not in data:
            out.append(p)
    return out


def all_tasks(folder: str) -> list[LoadedTask]:
    return [t for f in task_files(folder) for t in load_tasks(f)]


def load_environment(name: str) -> Environment:
    root = ENVIRONMENTS / name
    spec = EnvironmentSpec.model_validate(yaml.safe_load((root / "environment.yaml").read_text()))
    return Environment(spec=spec, root=root)


Agent = Callable[[AgentContext], Awaitable[AgentResult]]


@dataclass
class TrialOutcome:
    evidence: Evidence
    verdicts: list[Verdict]
    result: AgentResult

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    def why(self) -> str:
        return "; ".join(f"{v.grader}: {r}" for v in self.verdicts for r in v.reasons)


async def run_trial(loaded: LoadedTask, agent: Agent) -> TrialOutcome:
    """provision → setup → snapshot s0 → agent → snapshot s1 → hidden in → grade → destroy."""
    task = loaded.task
    env = load_environment(task.environment or "qa")
    provider = LocalProvider()
    sandbox = await provider.create(SandboxRequest(environment=env, image_id=None))
    try:
        for command in [*env.spec.setup, *task.setup]:
            r = await sandbox.exec(command, timeout=60)
            assert r.ok, f"setup '{command}' failed: {r.stderr}"
        s0 = await snapshot_state(sandbox, env)
        ctx = ReferenceContext(
            task_id=task.id,
            task=task,
            arm=Arm(name="test", agent="test"),
            instruction=task.instruction,
            sandbox=sandbox,
            environment=env,
            seed=0,
            budgets=Budgets(max_steps=200, timeout_s=None),
        )
        try:
            result = await agent(ctx)
        except EpisodeEnded as ended:  # as harness.trial does: grade what was done
            result = AgentResult(info={"ended_by": ended.tool})
        s1 = await snapshot_state(sandbox, env)
        # Graded in this same sandbox (unsafe-local, for speed); trials use a fresh one.
        grader = await install_in_place(sandbox, loaded.hidden_dir)
        messages = [e.content or "" for e in ctx.trajectory.events if e.kind == "message"]
        if result.answer is not None:
            messages.append(result.answer)
        evidence = Evidence(
            task=task,
            answer=result.answer,
            messages=messages,
            trajectory=list(ctx.trajectory.events),
            initial_state=s0,
            final_state=s1,
            state_ignore=list(env.spec.state.ignore),
            sandbox=grader,
            hidden_dir=grader.hidden_dir,
        )
        verdicts = [await build_grader(spec).grade(evidence) for spec in task.graders]
        return TrialOutcome(evidence, verdicts, result)
    finally:
        await sandbox.destroy()
