"""Ask the pairwise judge about stored trials: every pair of the chosen sides (arms of one
run, or ``RUN:ARM`` sides of several runs), on every task and trial index both sides ran,
in both orders.

A pair is two trials that share a task, a variant and a trial index (so the same seed, a
matched block); a side with no output of its agent (an ``infra_error`` trial) or no trial at
all is skipped and counted. Judgements already stored for the same setup are reused (no call
is made twice; one stored with the two sides the other way round is read mirrored); each new
one is stored as soon as the judge answers. A reply that names no winner is stored as
``unresolved`` (it was paid for) and never counts as a win. A judge that cannot be reached,
or refuses the request, stops the command with one line (``GraderError``): what was stored
meanwhile is kept and a rerun continues from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import anyio

from graders.judge_call import JudgeCaller
from harness.errors import GraderError
from harness.pairwise.prompt import SYSTEM, PairwiseReplyError, parse, render, response_text
from harness.pairwise.setup import PairwiseJudgeSetup
from harness.store import Store, Trial, now
from harness.store.pairwise import mirrored, put_judgement, setup_judgements
from harness.store.tables import PairwiseJudgement, Run

WITH_OUTPUT = ("passed", "failed", "grader_error")
"""Trial statuses whose agent finished its turn and left an output to compare."""


@dataclass(frozen=True)
class Job:
    """One judge call: the pair (side arm_a's trial ``a``, side arm_b's ``b``) shown in one
    order. The sides are arms within a run, ``RUN:ARM`` across runs."""

    arm_a: str
    arm_b: str
    a: Trial
    b: Trial
    shown_first: str
    """'A': a's response is Response A; 'B': b's is."""

    @property
    def key(self) -> tuple[int | None, int | None, str]:
        return (self.a.id, self.b.id, self.shown_first)


@dataclass
class Outcome:
    """What one invocation did: the judgements of this setup, the new calls and their spend."""

    judgements: list[PairwiseJudgement]
    skipped: dict[str, int]
    new_calls: int = 0
    reused: int = 0
    spend: dict[str, float | None] = field(
        default_factory=lambda: {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    )


Cell = tuple[str, str, int]
"""A task, variant and trial index: where two sides' trials pair."""


def by_arm(trials: Sequence[Trial], arms: Sequence[str]) -> dict[str, list[Trial]]:
    """One run's trials as sides, one per arm (in ``arms``' order)."""
    return {arm: [t for t in trials if t.arm == arm] for arm in arms}


def plan(sides: Mapping[str, Sequence[Trial]]) -> tuple[list[Job], dict[str, int]]:
    """The judge calls for every pair of ``sides`` (label -> trials, in their order) and the
    pairs skipped."""
    cells_of: dict[str, dict[Cell, Trial]] = {
        side: {(t.task_id, t.variant, t.trial_index): t for t in trials}
        for side, trials in sides.items()
    }
    cells = sorted({c for own in cells_of.values() for c in own})
    jobs: list[Job] = []
    skipped: dict[str, int] = {}
    for arm_a, arm_b in combinations(sides, 2):
        for cell in cells:
            a, b = cells_of[arm_a].get(cell), cells_of[arm_b].get(cell)
            if a is None or b is None:
                why = "one side has no trial of that task and index"
            elif a.status not in WITH_OUTPUT or b.status not in WITH_OUTPUT:
                why = "one side's agent left no output (infra_error)"
            else:
                jobs += [Job(arm_a, arm_b, a, b, first) for first in ("A", "B")]
                continue
            skipped[why] = skipped.get(why, 0) + 1
    return jobs, skipped


def instruction_of(config: Mapping[str, Any], task_id: str, variant: str) -> str:
    """The instruction both agents were given (a variant's rewording when it has one)."""
    task = (config.get("tasks") or {}).get(task_id) or {}
    for v in task.get("variants") or []:
        if isinstance(v, dict) and v.get("id") == variant and v.get("instruction"):
            return str(v["instruction"])
    return str(task.get("instruction") or "(the task's instruction is not stored)")


class _Asker:
    """Renders one job's prompt, asks, and stores the judgement."""

    def __init__(
        self,
        db: Store,
        configs: Mapping[str, Mapping[str, Any]],
        setup: PairwiseJudgeSetup,
        outcome: Outcome,
    ):
        self.db, self.configs, self.setup, self.outcome = db, configs, setup, outcome
        self.hash = setup.setup_hash()
        self.caller = JudgeCaller(setup.model, setup.api)
        self._shown: dict[int, str] = {}

    def _response(self, trial: Trial) -> str:
        assert trial.id is not None
        if trial.id not in self._shown:
            events = self.db.events(trial.id) if "conversation" in self.setup.reads else []
            self._shown[trial.id] = response_text(trial.answer, events, self.setup.reads)
        return self._shown[trial.id]

    async def ask(self, job: Job) -> None:
        first, second = (job.a, job.b) if job.shown_first == "A" else (job.b, job.a)
        prompt = render(
            instruction_of(self.configs[job.a.run_id], job.a.task_id, job.a.variant),
            self.setup.question,
            self.setup.rubric,
            self._response(first),
            self._response(second),
        )
        # Seeded where the API takes a seed: the pair's trial seed, plus 1 for the swap.
        seed = (job.a.seed + (job.shown_first == "B")) % (2**31)
        text, spent = await self.caller.ask(SYSTEM, prompt, seed)
        try:
            position, reason = parse(text)
            verdict = position if position == "tie" else _arm_of(position, job.shown_first)
        except PairwiseReplyError as exc:
            verdict, reason = "unresolved", f"judge answered garbage: {exc}"
        assert job.a.id is not None and job.b.id is not None
        row = PairwiseJudgement(
            run_id=job.a.run_id,
            run_b=job.b.run_id if job.b.run_id != job.a.run_id else None,
            setup=self.hash,
            judge_model=self.setup.model.name,
            arm_a=job.a.arm,
            arm_b=job.b.arm,
            task_id=job.a.task_id,
            variant=job.a.variant,
            trial_index=job.a.trial_index,
            trial_a=job.a.id,
            trial_b=job.b.id,
            shown_first=job.shown_first,
            verdict=verdict,
            reason=reason,
            tokens_in=spent["tokens_in"],
            tokens_out=spent["tokens_out"],
            cost_usd=spent["cost_usd"],
            latency_s=spent["latency_s"] or 0.0,
            judged_at=now(),
        )
        put_judgement(self.db.engine, row)
        self.outcome.judgements.append(row)
        self.outcome.new_calls += 1
        for k in ("tokens_in", "tokens_out", "cost_usd"):
            got, total = spent[k], self.outcome.spend[k]
            self.outcome.spend[k] = None if got is None or total is None else total + got


def _arm_of(position: str, shown_first: str) -> str:
    """The arm ('A' = arm_a, 'B' = arm_b) behind the position the judge chose."""
    return position if shown_first == "A" else ("B" if position == "A" else "A")


def judge_run(
    db: Store, run: Run, setup: PairwiseJudgeSetup, arms: Sequence[str], concurrency: int = 4
) -> Outcome:
    """Judge every pair of ``arms`` in ``run`` not yet judged by ``setup``; the outcome holds
    every judgement of that setup on those pairs, reused and new.

    Raises ``GraderError`` (one line) when the judge cannot be reached or refuses."""
    return judge_sides(db, by_arm(db.trials(run.id), arms), {run.id: run}, setup, concurrency)


def judge_sides(
    db: Store,
    sides: Mapping[str, Sequence[Trial]],
    runs: Mapping[str, Run],
    setup: PairwiseJudgeSetup,
    concurrency: int = 4,
) -> Outcome:
    """Judge every pair of ``sides`` (label -> trials of ``runs``) not yet judged by
    ``setup``; the outcome holds every judgement of that setup on those pairs, reused (read
    in the sides' order) and new.

    Raises ``GraderError`` (one line) when the judge cannot be reached or refuses."""
    jobs, skipped = plan(sides)
    stored: dict[tuple[int | None, int | None, str], PairwiseJudgement] = {}
    for j in setup_judgements(db.engine, setup.setup_hash(), list(runs)):
        stored[(j.trial_a, j.trial_b, j.shown_first)] = j
        stored.setdefault((j.trial_b, j.trial_a, "B" if j.shown_first == "A" else "A"), j)
    outcome = Outcome([], skipped)
    todo = []
    for job in jobs:
        got = stored.get(job.key)
        if got is None:
            todo.append(job)
        else:
            outcome.judgements.append(got if got.trial_a == job.a.id else mirrored(got))
    outcome.reused = len(outcome.judgements)
    configs = {rid: r.config or {} for rid, r in runs.items()}
    asker = _Asker(db, configs, setup, outcome)
    limit = anyio.CapacityLimiter(concurrency)
    failed: list[GraderError] = []

    async def one(job: Job) -> None:
        async with limit:
            if failed:
                return  # the judge failed: start nothing new, let paid calls be stored
            try:
                await asker.ask(job)
            except GraderError as exc:
                failed.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for job in todo:
                tg.start_soon(one, job)

    anyio.run(main)
    if failed:
        raise GraderError(
            f"{failed[0]} ({outcome.new_calls} new judgement(s) stored; run the command "
            "again to continue from them)"
        )
    return outcome
