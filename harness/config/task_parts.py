"""Parts of a task file's task: its reference solution, where its code graders run, and
the steps of a multi-step task (re-exported by ``harness.config.models``)."""

from __future__ import annotations

from pydantic import Field

from harness.config.base import Seconds, Strict


class ToolCall(Strict):
    """One call of an environment tool in a reference solution."""

    tool: str
    """the environment tool to call"""
    args: dict[str, object] = Field(default_factory=dict)
    """its arguments (sent as JSON on stdin)"""


class Solution(Strict):
    """The reference solution the oracle agent runs; proves the task is solvable."""

    commands: list[str] = Field(default_factory=list, description="shell commands in the sandbox")
    actions: list[ToolCall] = Field(default_factory=list, description="environment tool calls")
    answer: str | None = Field(None, description="what the agent finally tells the user")


class ServiceFiles(Strict):
    """What a grading sandbox gets from one of the environment's services (Harbor's
    artifacts of a sidecar): after the agent's container is stopped, the ``collect``
    commands run in the service (its own user, ``sh -c``), then ``paths`` are taken out of
    it as data and copied into the grading sandbox at the same paths, owned by the agent's
    user. The grading sandbox itself never reaches the service."""

    paths: list[str] = Field(
        default_factory=list, description="absolute paths in the service's container"
    )
    collect: list[str] = Field(
        default_factory=list,
        description="shell commands run in the service before its files are taken "
        "(Harbor's [[verifier.collect]]; a snapshot of its in-memory state)",
    )
    timeout_s: Seconds = Field(30.0, description="the limit of each collect command")


class Grading(Strict):
    """Where this task's graders that run code (hidden tests, verifiers) run: a fresh
    grading sandbox, by default from the task's own environment with no network, the grader
    root holding only the capabilities to drop to the agent's user, and the agent's work dir
    copied in. Each setting here is the grading sandbox's alone: the agent's never gets it.
    A task graded in place has no grading sandbox: only ``network`` and ``internet`` apply,
    as the network of the agent's sandbox while it is graded (default: the agent's)."""

    environment: str | None = Field(
        None,
        description="an environment (its own image, files and setup) for the grading "
        "sandbox instead of the task's (Harbor's separate verifier environment)",
    )
    network: list[str] = Field(
        default_factory=list,
        description="hosts the grading sandbox may reach (names, IP addresses or CIDR "
        "blocks; Docker only)",
    )
    internet: bool = Field(
        False,
        description="open egress for the grading sandbox (to install test tools); needs "
        "the suite's allow_internet",
    )
    root: bool = Field(
        False,
        description="the grader keeps Docker's default root capabilities (apt-get, pip "
        "install) instead of only those to drop to the agent's user",
    )
    files: list[str] | None = Field(
        None,
        description="paths copied from the agent's sandbox into the grading sandbox "
        "(relative to the workdir, or absolute; what lies under the agent's work dir lands "
        "under the grading sandbox's); default: the whole work dir",
    )
    services: dict[str, ServiceFiles] = Field(
        default_factory=dict,
        description="files taken from the environment's services for the grading "
        "sandbox (service name -> paths, and commands run there first); Docker only",
    )


IN_PLACE_GRADING = frozenset({"network", "internet"})
"""The ``grading`` settings a task (or step) graded in place may give: its network."""


class TaskStep(Strict):
    """One step of a multi-step task: the agent gets its instruction in the sandbox the
    earlier steps left, then the task's graders run with the step's hidden material (in
    place, or in a fresh grading sandbox while the agent's sandbox waits for the next step);
    a reward below ``min_reward`` ends the trial there."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """the step's name, shown in the report"""
    instruction: str
    """what the agent is told for this step"""
    solution: Solution | None = None
    """the oracle's solution of this step"""
    hidden: str | None = Field(None, description="dir of this step's hidden material")
    timeout_s: Seconds | None = None
    """the step's time budget (default: the task's)"""
    min_reward: float | None = Field(None, ge=0, le=1)
    """below it, the later steps are not run (they score 0)"""
    files: str | None = Field(
        None,
        description="dir (relative to the task file) copied into the workdir before this "
        "step's agent turn (Harbor's steps/NAME/workdir)",
    )
    setup: list[str] = Field(default_factory=list)
    """shell commands run in the sandbox after the step's files, before its agent turn (a
    failing one: the task is broken)"""
    network: list[str] | None = Field(
        None,
        description="hosts the agent's sandbox may reach during this step instead of the "
        "task's (its environment's `network` stays; [] for none; Docker only)",
    )
    internet: bool | None = Field(
        None,
        description="open egress for the agent during this step instead of the task's "
        "network (needs the suite's allow_internet; Docker only)",
    )
    grading: Grading | None = Field(
        None,
        description="this step's own grading sandbox (environment, network, files) instead "
        "of the task's (Harbor's per-step separate verifier); with grade_in_place, only "
        "its network and internet: the agent's sandbox's network while the step is graded",
    )
    grade_in_place: str | None = Field(
        None,
        description="why this step is graded in the agent's own sandbox when the task's "
        "other steps are not (Harbor's per-step shared verifier)",
    )
