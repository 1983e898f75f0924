"""The network each sandbox of a task gets: none, an allowlist of hosts, or open egress.

One policy for the agent's sandbox (the environment's ``network`` hosts plus the task's own,
or ``internet: true``) and one for the grading sandbox (``grading.network`` /
``grading.internet``, plus a separate grading environment's own hosts): each is decided
here once, checked against what the backend can honour when the suite loads, and recorded
on every trial. A sandbox that lives through several phases has each phase's policy
(``phases``): a task graded in place whose ``grading`` gives a network is graded on that one
in the agent's sandbox, a step with a ``network`` / ``internet`` of its own has it for its
turn; the backend switches the running sandbox's network between them, only after the
agent's processes are gone, and back before the agent's next turn. Open egress is the
user's to allow (the suite's ``allow_internet``, or ``harness run --allow-internet``); a run
that allows it says so once on stderr.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.config.models import Environment, Task
from harness.config.step_grading import graded_views, step_task
from harness.config.task_parts import IN_PLACE_GRADING

Mode = Literal["none", "allowlist", "open"]


@dataclass(frozen=True)
class Policy:
    """What one sandbox may reach."""

    mode: Mode
    hosts: tuple[str, ...] = ()

    @property
    def network(self) -> list[str] | None:
        """As ``SandboxRequest.network``: the hosts (empty: none); open egress is separate."""
        return list(self.hosts) if self.mode == "allowlist" else []

    @property
    def internet(self) -> bool:
        return self.mode == "open"

    def describe(self) -> str:
        """How the trial row records it: ``none``, ``open`` or ``allowlist: a, b``."""
        return f"allowlist: {', '.join(self.hosts)}" if self.mode == "allowlist" else self.mode


def _policy(internet: bool, hosts: list[str]) -> Policy:
    if internet:
        return Policy("open")
    return Policy("allowlist", tuple(sorted(set(hosts)))) if hosts else Policy("none")


def agent_policy(env: Environment | None, task: Task) -> Policy:
    """The agent's sandbox: open egress when the task asks for it, else its environment's
    hosts and the task's own."""
    hosts = [*(env.spec.network if env else []), *task.network]
    return _policy(task.internet, hosts)


def grading_policy(env: Environment | None, task: Task) -> Policy:
    """The grading sandbox (``env``: the environment it is made from): no network unless
    ``grading`` asks for hosts or open egress; a separate grading environment adds its own
    hosts (the task's environment's hosts are the agent's, never the grader's)."""
    own = env.spec.network if env is not None and env.name == task.grading.environment else []
    return _policy(task.grading.internet, [*own, *task.grading.network])


def step_agent_policy(env: Environment | None, task: Task, index: int) -> Policy:
    """The agent's sandbox during step ``index``: the step's own ``network`` / ``internet``
    (with its environment's hosts) when it sets one, else the task's."""
    step = task.steps[index]
    if step.network is None and step.internet is None:
        return agent_policy(env, task)
    return _policy(bool(step.internet), [*(env.spec.network if env else []), *(step.network or [])])


def in_place_policy(view: Task, agent: Policy) -> Policy:
    """The agent's sandbox while a task (or step: ``view``) graded in place is graded: its
    grading's ``network`` / ``internet`` when it gives one, else the agent's (``agent``)."""
    if IN_PLACE_GRADING & view.grading.model_fields_set:
        return _policy(view.grading.internet, view.grading.network)
    return agent


@dataclass(frozen=True)
class Phase:
    """One phase's network: the agent's turn (of the task, or of one step) or a grading."""

    kind: Literal["agent", "grading"]
    step: str | None
    """The step's name (a multi-step task), else None."""
    policy: Policy
    where: tuple[str | int, ...]
    """The setting that gives it, relative to the task."""
    environment: Environment
    """The environment of its sandbox (a separate grading sandbox's may be another)."""
    switched: bool
    """It runs in the agent's running sandbox after a phase of another policy: the backend
    switches the sandbox's network (``Sandbox.switch_network``)."""

    @property
    def key(self) -> str:
        """How the trial row names it: ``agent``, ``grading``, ``agent: step NAME``..."""
        return f"{self.kind}: step {self.step}" if self.step else self.kind


def phases(environments: Mapping[str, Environment], task: Task) -> list[Phase]:
    """Every phase of ``task`` with its network, in the order a trial runs them: the agent's
    sandbox as made, then the grading (single-step), or each step's turn and grading."""
    env = environments.get(task.environment or "")
    if env is None:
        return []
    agent = agent_policy(env, task)
    where: tuple[str | int, ...] = ("internet" if task.internet else "network",)
    out = [Phase("agent", None, agent, where, env, False)]
    if not task.steps:
        return [*out, _grading(environments, env, task, (), None, agent)]
    current = agent
    for i, step in enumerate(task.steps):
        mine = step_agent_policy(env, task, i)
        if step.network is not None or step.internet is not None:
            key = "internet" if step.internet else "network"
            out.append(Phase("agent", step.name, mine, ("steps", i, key), env, mine != current))
        current = mine
        view = step_task(task, i)
        at = ("steps", i) if view is not task else ()
        out.append(_grading(environments, env, view, at, step.name, mine))
    return out


def _grading(
    environments: Mapping[str, Environment],
    env: Environment,
    view: Task,
    at: tuple[str | int, ...],
    step: str | None,
    agent: Policy,
) -> Phase:
    """The grading phase of ``view`` (the task, or one step as graded) after the agent's
    phase of policy ``agent``."""
    key = "internet" if view.grading.internet else "network"
    if view.grade_in_place is not None:
        policy = in_place_policy(view, agent)
        return Phase("grading", step, policy, (*at, "grading", key), env, policy != agent)
    genv = environments.get(view.grading.environment or "", env)
    return Phase("grading", step, grading_policy(genv, view), (*at, "grading", key), genv, False)


def recorded(environments: Mapping[str, Environment], task: Task) -> dict[str, str]:
    """What a trial row keeps (``evidence.network``): each phase's policy, described. A task
    graded in place is graded in its agent's sandbox, on the agent's network unless its
    grading gives another; a step has entries of its own (``agent: step NAME``, ``grading:
    step NAME``) where its network is not the task's."""
    found = phases(environments, task)
    if not found:
        return {}
    out = {"agent": found[0].policy.describe()}
    if not task.steps:
        out["grading"] = found[1].policy.describe()
        return out
    top = phases(environments, task.model_copy(update={"steps": []}))[1].policy.describe()
    out["grading"] = top
    graded_otherwise = {task.steps[int(at[1])].name for at, _ in graded_views(task) if at}
    for phase in found[1:]:
        said = phase.policy.describe()
        if phase.kind == "agent" or said != top or phase.step in graded_otherwise:
            out[phase.key] = said
    return out


def open_egress_tasks(tasks: list[Task]) -> list[str]:
    """Ids of the tasks whose agent (in any step) or grading sandbox gets open egress."""
    return [
        t.id
        for t in tasks
        if t.internet
        or any(s.internet for s in t.steps)
        or any(v.grading.internet for _, v in graded_views(t))
    ]


def announcement(tasks: list[Task]) -> str | None:
    """The one line a run that allows open egress prints (None when no task uses it)."""
    ids = open_egress_tasks(tasks)
    if not ids:
        return None
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return (
        f"open egress: {len(ids)} task(s) may reach the internet from their sandboxes "
        f"({shown}); allowed by allow_internet / --allow-internet"
    )
