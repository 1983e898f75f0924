"""`harness validate`: prove every task is solvable and every grader catches the usual cheats.

For each task it runs, through the real trial lifecycle and the suite's sandbox:
the oracle (must pass, else the task is broken), the noop agent (the do-nothing floor per
class) and each applicable failure mode of the simulated agent as a mutant (each must fail).
Results go to a throw-away store, never the user's.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

import anyio

from harness.config.loader import ResolvedSuite
from harness.config.models import Arm
from harness.orchestrator import execute
from harness.plan import Job
from harness.resolve import Resolved, resolve
from harness.run_context import run_context
from harness.seeds import trial_seed
from harness.store import Store, Trial

ORACLE, NOOP, MUTANT_PREFIX = "validate-oracle", "validate-noop", "mutant-"


class BrokenTask(TypedDict):
    """A task whose reference solution (the oracle) did not pass."""

    task: str
    status: str
    reason: str


class FalsePass(TypedDict):
    """A mutant trial (a known-wrong agent) that the task's graders passed."""

    task: str
    mutant: str


class UnresolvedTrial(TypedDict):
    """A validation trial that ended without a verdict."""

    task: str
    agent: str
    status: str
    reason: str


@dataclass
class ValidationReport:
    broken: list[BrokenTask] = field(default_factory=list)
    """Tasks whose oracle did not pass."""
    noop_by_class: dict[str, list[int]] = field(default_factory=dict)
    """class -> [noop passes, tasks]."""
    noop_passes: list[str] = field(default_factory=list)
    mutant_runs: dict[str, int] = field(default_factory=dict)
    """mutant kind -> trials run."""
    false_passes: list[FalsePass] = field(default_factory=list)
    """Mutant trials that passed overall."""
    grader_false_passes: dict[str, dict[str, int]] = field(default_factory=dict)
    """grader -> mutant kind -> times that grader passed a mutant (others may have caught it)."""
    errors: list[UnresolvedTrial] = field(default_factory=list)
    """Trials that ended without a verdict (infra, grader or harness errors)."""
    tasks: int = 0

    @property
    def ok(self) -> bool:
        return not self.broken and not self.false_passes and not self.errors


def validate_suite(
    resolved: ResolvedSuite,
    sandbox: str | None = None,
    concurrency: int | None = None,
    progress: bool = False,
) -> ValidationReport:
    """Run the oracle, the noop agent and every applicable mutant once per task; ``progress``
    shows a bar (or a line per 10% when not on a terminal) on stderr."""
    from harness.agents.mutants import applicable_mutants

    suite = resolved.suite
    arms = [Arm(name=ORACLE, agent="oracle"), Arm(name=NOOP, agent="noop")]
    jobs: list[Job] = []
    kinds: set[str] = set()
    for lt in resolved.tasks:
        seed = trial_seed(suite.seed, lt.task.id, 0)
        jobs += [Job(ORACLE, lt.task.id, 0, seed), Job(NOOP, lt.task.id, 0, seed)]
        for kind in applicable_mutants(lt.task):
            kinds.add(kind)
            jobs.append(Job(MUTANT_PREFIX + kind, lt.task.id, 0, seed))
    arms += [
        Arm(
            name=MUTANT_PREFIX + k, agent="harness.agents.mutants:MutantAgent", params={"mutant": k}
        )
        for k in sorted(kinds)
    ]
    probe = resolved.suite.model_copy(update={"arms": arms, "trials": 1})
    probe_resolved = resolve(
        ResolvedSuite(
            probe,
            resolved.path,
            resolved.tasks,
            resolved.environments,
            resolved.config_hash,
            lines=resolved.lines,
        ),
        sandbox,
    )
    with tempfile.TemporaryDirectory(prefix="harness-validate-") as tmp:
        store = Store(f"sqlite:///{tmp}/validate.db")
        rows = anyio.run(
            _execute, probe_resolved, jobs, store, concurrency or suite.concurrency, progress
        )
        store.close()
    return _analyse(rows, resolved)


async def _execute(
    resolved: Resolved,
    jobs: list[Job],
    store: Store,
    concurrency: int,
    progress: bool = False,
) -> list[Trial]:
    from harness.progress import TrialProgress
    from harness.store import Run, now

    assert resolved.sandbox is not None
    backend = resolved.sandbox.name
    provider = resolved.sandbox.open() if resolved.environments else None
    image_ids = await provider.prepare(list(resolved.environments.values())) if provider else {}
    run_id = "validate"
    store.create_run(
        Run(
            id=run_id,
            suite_name=resolved.suite.name,
            suite_path=str(resolved.path),
            config_hash=resolved.config_hash,
            harness_version="",
            config={},
            seed=resolved.suite.seed,
            trials_per_task=1,
            arms=[a.name for a in resolved.suite.arms],
            sandbox=backend,
            started_at=now(),
        )
    )
    rc = run_context(run_id, resolved, provider, image_ids, backoff_s=0.1)
    try:
        title = f"validate {resolved.suite.name}"
        with TrialProgress(len(jobs), title, enabled=progress) as bar:
            await execute(
                rc, jobs, store, concurrency=concurrency, handle_signals=False, progress=bar
            )
    finally:
        if provider is not None:
            await provider.close()
    from harness.analysis.load import load_trial_rows

    return load_trial_rows(store, run_id)


def _analyse(rows: list[Trial], resolved: ResolvedSuite) -> ValidationReport:
    report = ValidationReport(tasks=len(resolved.tasks))
    noop: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    grader_fp: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        arm, task = r.arm, r.task_id
        if r.status not in ("passed", "failed"):
            report.errors.append(
                {"task": task, "agent": arm, "status": r.status, "reason": r.reason[:300]}
            )
            if arm == ORACLE:
                report.broken.append({"task": task, "status": r.status, "reason": r.reason[:300]})
            continue
        if arm == ORACLE and not r.passed:
            report.broken.append({"task": task, "status": r.status, "reason": r.reason[:300]})
        elif arm == NOOP:
            cls = r.task_class
            noop[cls][1] += 1
            if r.passed:
                noop[cls][0] += 1
                report.noop_passes.append(task)
        elif arm.startswith(MUTANT_PREFIX):
            kind = arm[len(MUTANT_PREFIX) :]
            report.mutant_runs[kind] = report.mutant_runs.get(kind, 0) + 1
            if r.passed:
                report.false_passes.append({"task": task, "mutant": kind})
            for grader, passed in _verdicts(r.evidence):
                if passed:
                    grader_fp[grader][kind] += 1
                else:
                    grader_fp[grader].setdefault(kind, 0)
    report.noop_by_class = dict(noop)
    report.grader_false_passes = {g: dict(v) for g, v in grader_fp.items()}
    return report


def _verdicts(evidence: Mapping[str, object]) -> list[tuple[str, bool]]:
    """(grader, passed) of each verdict in a trial's stored evidence (``TrialEvidence``)."""
    graders = evidence.get("graders")
    if not isinstance(graders, list):
        return []
    return [(str(v["grader"]), bool(v["passed"])) for v in graders if isinstance(v, dict)]
