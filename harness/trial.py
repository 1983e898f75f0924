"""One trial, top to bottom: provision → setup → snapshot s0 → agent → its files out as data →
destroy its sandbox → grade (in a fresh grading sandbox when a grader runs code) → teardown.

``run_trial`` owns the retry decision (infrastructure crashes only, by exception type) and
returns a ``TrialRecord`` ready to be written as one store row. Nothing here writes the store.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

import anyio

from graders import Evidence, Verdict, combine
from graders.base import Harm
from graders.judge_workspace import WorkView
from harness import errors, grading, trial_multistep, trial_steps
from harness.agents import AgentResult
from harness.agents.base import Usage
from harness.plan import Job
from harness.run_context import RunContext
from harness.sandbox.workproduct import WorkArchive, WorkProduct
from harness.store import now
from harness.store.tables import AttemptRow
from harness.tools.client import ToolServer
from harness.trial_agent import agent_context, agent_turn, grade
from harness.trial_rows import TrialEvidence, TrialRecord, severity, traceback_text, trial_row
from harness.trial_rows import attempt_row as attempt_row  # re-exported: executors import it
from harness.trial_steps import TaskSetupError as TaskSetupError  # re-exported

T = TypeVar("T")


Attempt = Callable[[int, Usage], Awaitable[TrialRecord]]
"""One attempt of a job: ``(number, spent) -> record``, charging what it uses to ``spent``;
raises to end the attempt (an ``InfraError`` is retried)."""


async def run_trial(job: Job, rc: RunContext, attempt: Attempt | None = None) -> TrialRecord:
    """Run a job until it has a verdict or its infrastructure attempts are used up: the one
    retry loop. ``attempt`` runs one attempt (default: here, in this process; the Ray
    executor passes one that runs it on a cluster node)."""
    if attempt is None:
        attempt = functools.partial(run_attempt, job, rc)
    policy = rc.retry
    max_attempts = policy.max_attempts
    attempts: list[AttemptRow] = []
    for number in range(1, max_attempts + 1):
        await rc.breaker.before_attempt()
        if rc.breaker.tripped is not None:  # the run is stopping: this trial stays unfinished
            rc.interrupted.extend(attempts)
            raise rc.breaker.tripped
        started = now()
        spent = Usage()  # this attempt's, kept whatever becomes of the attempt
        try:
            record = await attempt(number, spent)
        except errors.InfraError as exc:
            rc.breaker.after_attempt(False, exc, job.arm)
            row = attempt_row(job, rc, number, "infra_error", repr(exc), started, spent)
            attempts.append(row)
            if rc.breaker.tripped is not None:
                rc.interrupted.extend(attempts)
                raise rc.breaker.tripped from exc
            if number == max_attempts:
                return error_record(job, rc, errors.INFRA_ERROR, exc, attempts, started, spent)
            await anyio.sleep(policy.delay(number))
            continue
        except anyio.get_cancelled_exc_class():
            # No final row: the trial stays unfinished and a resume runs it again.
            attempts.append(attempt_row(job, rc, number, "interrupted", None, started, spent))
            rc.interrupted.extend(attempts)
            raise
        except Exception as exc:  # not in the taxonomy: a bug of ours; recorded, never retried
            rc.breaker.after_attempt(True, None, job.arm)
            kind = errors.classify(exc)
            attempts.append(attempt_row(job, rc, number, kind, traceback_text(exc), started, spent))
            return error_record(job, rc, kind, exc, attempts, started, spent)
        rc.breaker.after_attempt(True, None, job.arm)
        attempts.append(attempt_row(job, rc, number, "ok", None, started, spent))
        record.attempts = attempts
        record.trial.attempts = number
        return record
    raise AssertionError("unreachable")


# long: it is the trial lifecycle read top to bottom, as DESIGN asks: provision, setup,
#   snapshot s0, the agent's turn, its files taken out as data, its sandbox destroyed, grading
#   (in a fresh grading sandbox when a grader runs code), teardown in ``finally``.
async def run_attempt(job: Job, rc: RunContext, number: int, spent: Usage) -> TrialRecord:
    """One attempt of one trial; its outcome decides whether the job is retried. ``spent``
    is charged with the attempt's usage (the caller keeps it if the attempt fails)."""
    loaded = rc.resolved.task(job.task_id)
    task = loaded.task
    suite = rc.resolved.suite
    arm = next(a for a in suite.arms if a.name == job.arm)
    env = rc.resolved.environments.get(task.environment) if task.environment else None
    variant = next((v for v in task.variants if v.id == job.variant), None) if job.variant else None
    started, t0 = now(), time.monotonic()
    agent_binding = rc.resolved.agents[arm.name]
    tool_server = env.spec.tool_server if env is not None else None
    served_state = tool_server is not None and tool_server.state
    how = grading.plan(env, task, rc.graders(task), served_state)
    labels = {
        "harness.run": rc.run_id,
        "harness.trial": f"{job.arm}/{job.task_id}/{job.trial_index}/{job.variant}",
        "harness.attempt": str(number),
    }

    socket_dir = (
        tempfile.mkdtemp(prefix="harness-sock-")
        if agent_binding.wants_socket_dir(arm, env is not None)
        else None
    )
    sandbox = await trial_steps.provision(
        rc, env, task, labels, socket_dir, agent_binding.build(arm), how
    )
    server: ToolServer | None = None
    grader: grading.GraderSandbox | None = None
    product: WorkProduct | None = None
    archive: tuple[WorkArchive, bytes | None] | None = None
    interrupted = False
    try:
        initial, server = await trial_steps.setup(sandbox, env, task, how) if env else (None, None)
        ctx = agent_context(
            agent_binding.cls, task, arm, variant, sandbox, env, job, suite, server, spent
        )
        failure: errors.AgentFailure | None = None
        result = AgentResult()
        steps: trial_multistep.Steps | None = None
        try:
            if task.steps and env is not None:  # each step graded in place as it ends
                steps = await trial_multistep.run_steps(
                    trial_multistep.StepRun(
                        rc,
                        job,
                        loaded,
                        arm,
                        agent_binding.cls,
                        agent_binding.make,
                        sandbox,
                        env,
                        server,
                        spent,
                        ctx.trajectory,
                        initial,
                        trial_steps.after_agent,
                        labels,
                        bool(served_state),
                    )
                )
                result, failure = steps.result, steps.failure
            else:
                result = await agent_turn(agent_binding.make(), ctx, sandbox)
        except errors.EpisodeEnded as ended:  # a terminating tool ran: grade what was done
            said = [e.content for e in ctx.trajectory.events if e.kind == "message"]
            result = AgentResult(answer=said[-1] if said else None, info={"ended_by": ended.tool})
        except errors.AgentFailure as exc:
            failure = exc
        latency = time.monotonic() - t0
        final = None
        files: dict[str, str | None] = {}
        work: WorkView | None = None
        try:
            if failure is None and server is not None and served_state:
                # The server's state is its own (only the harness talks to it): read it
                # before the agent's processes (the server's too) are stopped.
                final = await server.snapshot()
            # Nothing of the agent outlives its turn, and its files leave as data (with
            # nothing to take out, destroying the sandbox below ends everything at once).
            if steps is None and (how.in_place or how.exports):  # steps: graded as they ended
                stop = sandbox.sweep() if how.in_place else sandbox.stop_agent()
                await trial_steps.after_agent(sandbox, stop, "stopping the agent's processes")
            if failure is None and steps is None and how.exports:
                product = await trial_steps.after_agent(
                    sandbox, sandbox.export(how.exports), "taking the agent's files out"
                )
                if how.services:  # the agent's container is stopped, its services not yet
                    await trial_steps.after_agent(
                        sandbox,
                        sandbox.export_services(how.services, product),
                        "taking the services' files out",
                    )
                final = final or await trial_steps.after_agent(
                    sandbox, grading.final_files_state(product, how), "reading the files state"
                )
                files = await trial_steps.after_agent(
                    sandbox, grading.final_file_texts(product, how), "reading the agent's files"
                )
                work = await trial_steps.after_agent(
                    sandbox, grading.final_work_view(product, how), "reading the agent's work dir"
                )
                archive = await grading.kept_work_archive(product, how)
        except errors.AgentFailure as exc:  # incl. the agent's input bringing the server down
            failure = failure or exc
        events = [e.model_copy(deep=True) for e in ctx.trajectory.events]
        if server is not None:
            await server.close()
            server = None
        if not how.in_place:  # the agent's sandbox is gone before any grading starts
            await sandbox.destroy()
        if failure is None and how.needs_sandbox and steps is None:
            try:
                grader, final = await trial_steps.grading_sandbox(
                    rc, env, task, loaded.hidden_dir, labels, sandbox, how, product, final
                )
            except errors.AgentFailure as exc:
                failure = exc
        if failure is not None:
            verdicts: list[Verdict] = []
            status, passed, score = errors.FAILED, False, 0.0
            reasons = [f"agent failure: {failure}"]
            harms: list[Harm] = []
        else:
            evidence = Evidence(
                task=rc.frozen_task(task),
                answer=result.answer,
                messages=[e.content or "" for e in events if e.kind == "message"],
                trajectory=events,
                initial_state=initial,
                final_state=final,
                state_ignore=list(env.spec.state.ignore) if env else [],
                sandbox=grader,
                hidden_dir=grader.hidden_dir if grader is not None else None,
                seed=job.seed,
                files=files,
                work=work,
            )
            verdicts = steps.verdicts if steps else await grade(rc.graders(task), evidence)
            combined = combine(verdicts)
            passed, score, reasons, harms = (
                combined.passed,
                combined.score,
                combined.reasons,
                combined.harms,
            )
            if steps is not None:
                passed, score, reasons = steps.outcome(task)
            in_place = how.in_place if steps is None else steps.in_place
            if in_place and (steps is None or not steps.mixed):  # mixed: marked per step
                reasons = [f"graded in place: {in_place}", *reasons]
            status = errors.PASSED if passed else errors.FAILED
    except BaseException as exc:  # cancellation or Ctrl-C: tell the backend the truth
        interrupted = not isinstance(exc, Exception)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            if server is not None:
                await server.close()
            if grader is not None:
                await grader.destroy(interrupted=interrupted)
            await sandbox.destroy(interrupted=interrupted)
        if product is not None:
            product.close()
        trial_steps.remove_dir(socket_dir)

    kept: TrialEvidence = {
        "graders": [v.to_json() for v in verdicts],
        "failure": str(failure) if failure else None,
        "info": result.info,
        "harms": harms,
        "graded_in_place": how.in_place if steps is None else steps.in_place,
    }
    if steps is not None:
        kept["steps"] = [r.to_json() for r in steps.records]
    if archive is not None and failure is None:
        kept["work_archive"], data = archive
        if data is not None:
            ctx.trajectory.blobs[kept["work_archive"]["blob"] or ""] = data
    return TrialRecord(
        trial=trial_row(
            job,
            rc,
            task,
            status,
            started,
            latency,
            ctx.usage,
            sandbox,
            passed=passed,
            score=score,
            reason="; ".join(reasons)[:2000],
            evidence=kept,
            answer=result.answer,
            confidence=result.confidence,
            harm_severity=max((severity(h) for h in harms), default=0.0),
            grader_versions={v.grader: v.version for v in verdicts},
            failure_kind=failure.reason if failure else None,
        ),
        attempts=[],
        events=events,
        blobs=ctx.trajectory.blobs,
    )


def error_record(
    job: Job,
    rc: RunContext,
    status: str,
    exc: BaseException,
    attempts: list[AttemptRow],
    started: datetime,
    usage: Usage | None = None,
) -> TrialRecord:
    """The record of a trial that ended without a verdict (``status``: an error kind), with
    its last attempt's usage (unknown when not given: never stored as zero)."""
    task = rc.resolved.task(job.task_id).task
    trial = trial_row(
        job,
        rc,
        task,
        status,
        started,
        0.0,
        usage or Usage(cost_usd=None, cost_known=False, tokens_known=False),
        None,
        passed=None,
        score=None,
        reason=f"{type(exc).__name__}: {exc}"[:2000],
        error=traceback_text(exc),
        attempts=len(attempts),
    )
    return TrialRecord(trial=trial, attempts=attempts, events=[])
