"""A multi-step task's steps, in order, in one sandbox (Harbor's ``[[steps]]``).

Each step: the agent gets the step's instruction (the oracle the step's solution) in the
sandbox the earlier steps left, with the step's time budget; its processes are then
stopped and the task's graders run with the step's hidden material, giving the step's
reward (the graders' score) and verdict. Where they run is the step's grading
(``harness.config.step_grading``): in place, in the agent's sandbox, or in a fresh grading
sandbox (the step's or the task's ``grading``: its own environment, network, and the files
it names copied from the agent's sandbox), destroyed before the next step, while the
agent's sandbox, never graded in, goes on to the next step. A step with a network of its
own has it for its turn, and a step graded in place whose grading gives a network has that
while graded (``harness.network``): the agent's sandbox switches between them. A reward below the step's ``min_reward``
ends the trial there: the later steps are not run and score 0. The steps share the trial's
trajectory and budgets; a note event opens each step, so the trajectory reads step by step
and each step's record names the range of events it holds.

The trial's verdict: passed when every step passed; its score the mean of the steps'
rewards (a step not run: 0) or the last step's (``step_reward: final``). An agent failure
in a step ends the trial as that failure, like a single-step trial's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders import Evidence, Verdict, combine
from harness import errors, grading, trial_steps
from harness.agents import AgentResult
from harness.agents.base import AgentContext, Usage
from harness.config import step_grading
from harness.config.models import Arm, BudgetOverride, Environment, Task, TaskStep
from harness.network import Policy, agent_policy, in_place_policy, step_agent_policy
from harness.plan import Job
from harness.sandbox.base import Sandbox
from harness.sandbox.workproduct import WorkProduct
from harness.step_json import StepJson
from harness.tools.client import ToolServer
from harness.trajectory import Trajectory
from harness.trial_agent import agent_context, agent_turn, grade

if TYPE_CHECKING:
    from harness.config.loader import LoadedTask
    from harness.run_context import RunContext


AfterAgent = Callable[[Sandbox, Awaitable[Any], str], Awaitable[Any]]
"""``trial_steps.after_agent``: a machinery step after the agent's turn, its failures read."""


@dataclass
class StepRecord:
    """One step as the trial row keeps it (``evidence.steps``)."""

    name: str
    reward: float | None = None
    """the graders' score; None: the step was not run (it scores 0)"""
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    first_event: int | None = None
    """the step numbers of the trajectory events this step holds (its note first)"""
    last_event: int | None = None
    in_place: str | None = None
    """why the step is graded in the agent's sandbox; None: in a fresh grading sandbox"""

    def to_json(self) -> StepJson:
        return {
            "name": self.name,
            "reward": self.reward,
            "passed": self.passed,
            "reasons": self.reasons,
            "events": [self.first_event, self.last_event],
            "graded_in_place": self.in_place,
        }


@dataclass
class Steps:
    """What the steps of one attempt came to."""

    records: list[StepRecord]
    result: AgentResult = field(default_factory=AgentResult)
    """the last step's agent result"""
    failure: errors.AgentFailure | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    """every run step's verdicts, in order"""

    def outcome(self, task: Task) -> tuple[bool, float, list[str]]:
        """(passed, score, reasons) of the trial."""
        rewards = [r.reward or 0.0 for r in self.records]
        score = rewards[-1] if task.step_reward == "final" else sum(rewards) / len(rewards)
        mixed = self.mixed
        reasons = [
            f"step {r.name}: "
            + ("not run" if r.reward is None else f"reward {r.reward:g}")
            + (" (graded in place)" if mixed and r.in_place and r.reward is not None else "")
            + (f" ({'; '.join(r.reasons)})" if r.reasons and not r.passed else "")
            for r in self.records
        ]
        return all(r.passed for r in self.records), score, reasons

    @property
    def mixed(self) -> bool:
        """Some steps are graded in place and some in a grading sandbox of their own."""
        return len({r.in_place is None for r in self.records}) > 1

    @property
    def in_place(self) -> str | None:
        """Why the trial counts as graded in place: a step graded in the agent's sandbox."""
        return next((r.in_place for r in self.records if r.in_place), None)


@dataclass
class StepRun:
    """What the trial hands the steps."""

    rc: RunContext
    job: Job
    loaded: LoadedTask
    arm: Arm
    agent_cls: type
    make_agent: Any
    sandbox: Sandbox
    env: Environment
    server: ToolServer | None
    usage: Usage
    trajectory: Trajectory
    initial: Any
    after_agent: AfterAgent
    labels: dict[str, str] = field(default_factory=dict)
    """the trial's sandbox labels (a step's grading sandbox carries them)"""
    served_state: bool = False
    """the tool server serves the state (``grading.plan``)"""
    network: Policy | None = None
    """the agent's sandbox's network in the current step (set by ``run_steps``)"""


async def run_steps(run: StepRun) -> Steps:
    """Every step in order until one ends the trial (module doc)."""
    task = run.loaded.task
    run.network = agent_policy(run.env, task)  # the sandbox's as made
    out = Steps(
        [
            StepRecord(step.name, in_place=step_grading.step_task(task, i).grade_in_place)
            for i, step in enumerate(task.steps)
        ]
    )
    for i, step in enumerate(task.steps):
        record = out.records[i]
        opened = run.trajectory.record("note", f"step {i + 1} of {len(task.steps)}: {step.name}")
        record.first_event = opened.step
        ctx = _step_context(run, step)
        try:
            await _prepare_step(run, i)
            out.result = await agent_turn(run.make_agent(), ctx, run.sandbox)
        except errors.EpisodeEnded as ended:
            out.result = AgentResult(info={"ended_by": ended.tool})
        except errors.AgentFailure as exc:
            out.failure = exc
        record.last_event = run.trajectory.events[-1].step
        if out.failure is None:
            try:
                verdicts = await _grade_step(run, i, out.result)
            except errors.AgentFailure as exc:  # what it left cannot be taken out or used
                out.failure = exc
        if out.failure is not None:
            record.reward, record.reasons = 0.0, [f"agent failure: {out.failure}"]
            break
        out.verdicts += verdicts
        combined = combine(verdicts)
        record.reward, record.passed = combined.score, combined.passed
        record.reasons = list(combined.reasons)
        if step.min_reward is not None and combined.score < step.min_reward:
            break
    return out


async def _prepare_step(run: StepRun, index: int) -> None:
    """Before the step's turn: its network (``harness.network.step_agent_policy``), its
    files into the workdir, then its setup commands (as the agent's user). A failing
    command before the first step is the task's fault (``TaskSetupError``); after one, the
    sandbox is what the agent left: its failure (``broke_environment``, the step scores 0)."""
    step = run.loaded.task.steps[index]
    wanted = step_agent_policy(run.env, run.loaded.task, index)
    if wanted != run.network:  # nothing of the agent runs: the last step's were swept
        await run.sandbox.switch_network(wanted.network or [], wanted.internet)
        run.network = wanted
    files = run.loaded.step_files_dir(index)
    if files is not None and index == 0:
        await run.sandbox.copy_in(files, ".")
    elif files is not None:  # into what the agent left
        await run.after_agent(run.sandbox, run.sandbox.copy_in(files, "."), "the step's files")
    for command in step.setup:
        result = await run.sandbox.exec(command, timeout=300)
        if result.ok:
            continue
        why = (
            f"setup command {command!r} of step '{step.name}' of task '{run.loaded.task.id}' "
            f"failed (exit {result.exit_code}): {result.stderr.strip()[-300:]}"
        )
        if index == 0:
            raise trial_steps.TaskSetupError(why)
        raise errors.AgentFailure("broke_environment", why)


def _step_context(run: StepRun, step: TaskStep) -> AgentContext:
    """The agent's context for one step: the step's instruction, solution and time budget,
    on the trial's one trajectory."""
    task = run.loaded.task
    budgets = task.budgets or BudgetOverride()
    if step.timeout_s is not None:
        budgets = budgets.model_copy(update={"timeout_s": step.timeout_s})
    step_task = task.model_copy(
        update={
            "instruction": step.instruction,
            "solution": step.solution,
            "budgets": budgets,
            "steps": [],
        }
    )
    ctx = agent_context(
        run.agent_cls,
        step_task,
        run.arm,
        None,
        run.sandbox,
        run.env,
        run.job,
        run.rc.resolved.suite,
        run.server,
        run.usage,
    )
    ctx.trajectory = run.trajectory  # one trajectory, numbered across the steps
    return ctx


async def _grade_step(run: StepRun, index: int, result: AgentResult) -> list[Verdict]:
    """Stop the agent's processes and run the task's graders on step ``index`` where the
    step is graded (``_grader_box``); its grading sandbox is gone (or the agent's sandbox
    the agent's again) before the next step. Raises ``AgentFailure`` when what the agent
    left cannot be taken out or used."""
    task = run.loaded.task
    await run.after_agent(run.sandbox, run.sandbox.sweep(), "stopping the agent's processes")
    graded = step_grading.step_task(task, index)
    box, final, product = await _grader_box(run, graded, run.loaded.step_hidden_dir(index))
    events = run.trajectory.events
    evidence = Evidence(
        task=run.rc.frozen_task(task),
        answer=result.answer,
        messages=[e.content or "" for e in events if e.kind == "message"],
        trajectory=[e.model_copy(deep=True) for e in events],
        initial_state=run.initial,
        final_state=final,
        state_ignore=list(run.env.spec.state.ignore),
        sandbox=box,
        hidden_dir=box.hidden_dir,
        seed=run.job.seed,
    )
    try:
        return await grade(run.rc.graders(task), evidence)
    finally:
        if box.in_place:
            await box.inner.end_grading()  # the next step is the agent's again
        else:  # the step's own grading sandbox: gone before the next step starts
            await box.destroy()
        if product is not None:
            product.close()


async def _grader_box(
    run: StepRun, graded: Task, hidden: Path | None
) -> tuple[grading.GraderSandbox, Any, WorkProduct | None]:
    """Where the step's graders run: the agent's own (swept) sandbox for a step graded in
    place; else a fresh grading sandbox (the step's or the task's ``grading``) with what the
    graders need of the agent's files copied in, the agent's sandbox left as it is for the
    next step. Returns (the grader's sandbox, the command-kind final state, the files taken
    out)."""
    how = grading.plan(run.env, graded, run.rc.graders(graded), run.served_state)
    if how.in_place:  # on the step's grading network when it gives one (back after it)
        agent = run.network or agent_policy(run.env, run.loaded.task)
        net = in_place_policy(graded, agent)
        place = await grading.install_in_place(run.sandbox, hidden, net if net != agent else None)
        return place, None, None
    product = None
    if how.exports:
        product = await run.after_agent(
            run.sandbox, run.sandbox.export(how.exports), "taking the agent's files out"
        )
    try:
        box, final = await trial_steps.grading_sandbox(
            run.rc,
            run.env,
            graded,
            hidden,
            run.labels,
            run.sandbox,
            how,
            product,
            None,
        )
    except BaseException:
        if product is not None:
            product.close()
        raise
    return box, final, product


__all__ = ["StepRecord", "StepRun", "Steps", "run_steps"]
