"""The network each sandbox of a task gets: none, an allowlist of hosts, or open egress.

One policy for the agent's sandbox (the environment's ``network`` hosts plus the task's own,
or ``internet: true``) and one for the grading sandbox (``grading.network`` /
``grading.internet``, plus a separate grading environment's own hosts): each is decided
here once, checked against what the backend can honour when the suite loads, and recorded
on every trial. Open egress is the user's to allow (the suite's ``allow_internet``, or
``harness run --allow-internet``); a run that allows it says so once on stderr.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.config.models import Environment, Task
from harness.config.step_grading import graded_views

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


def recorded(environments: Mapping[str, Environment], task: Task) -> dict[str, str]:
    """What a trial row keeps (``evidence.network``): each sandbox's policy, described; a
    task graded in place is graded in its agent's sandbox, on the agent's network; a step
    graded otherwise than its task has its own entry (``grading: step NAME``)."""
    env = environments.get(task.environment or "")
    if env is None:
        return {}
    agent = agent_policy(env, task).describe()
    out = {"agent": agent}
    for at, view in graded_views(task):
        key = f"grading: step {task.steps[int(at[1])].name}" if at else "grading"
        genv = environments.get(view.grading.environment or "", env)
        out[key] = (
            agent if view.grade_in_place is not None else grading_policy(genv, view).describe()
        )
    return out


def open_egress_tasks(tasks: list[Task]) -> list[str]:
    """Ids of the tasks whose agent or grading sandbox gets open egress."""
    return [
        t.id for t in tasks if t.internet or any(v.grading.internet for _, v in graded_views(t))
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
