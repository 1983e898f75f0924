"""`harness validate --judge-checks RUN`: does the judge's verdict move when nothing that
matters changes?

For every judged trial of a stored run, the same pinned judge setup (the suite's judge
grader whose setup hash the trial's verdict carries) is asked again three ways:

- ``repeat``: the same prompt, the same seeds. The control: how often the verdict moves
  with nothing changed (the judge's own noise; the other checks are read against it).
- ``length``: the final answer padded with neutral filler that states no fact (about
  doubling it). A judge that favours long answers moves here.
- ``position``: the rubric's criteria listed in reverse order. A judge that treats the
  first (or last) criterion differently moves here.

A move is a criterion whose pass/fail differs from the stored verdict. Judge calls go
through the same upstream code as in a run (its key, retries, price): their tokens and
cost are summed and reported. A judge that reads the agent's files or explores its work dir
reads them again from the trial's work archive (kept in the store when such a judge graded
it), through the same read-only tools. Trials whose setup is no longer in the suite, or
that kept no archive, are skipped and counted.

A pairwise judge (``--pairwise FILE``, else the run suite's ``pairwise:`` judge) is checked
on the pairs it judged in the run, each stored in both orders:

- ``position``: no call. The stored verdict with the order swapped against the stored one
  (a move is a different arm, or a tie against an arm): the flip rate.
- ``repeat``: the A-first prompt asked again, same seed (the control).
- ``length``: the A-first prompt with the response the stored verdict did not pick (A's on
  a tie) padded with the same filler. A judge that favours long answers moves here.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from graders.base import Evidence
from graders.judge import Judge, JudgeParams
from graders.judge_call import JudgeCaller
from graders.judge_workspace import WorkView
from harness.config.loader import ResolvedSuite
from harness.grading import FILE_TEXT_LIMIT
from harness.pairwise.judging import instruction_of
from harness.pairwise.prompt import SYSTEM as PAIR_SYSTEM
from harness.pairwise.prompt import PairwiseReplyError, parse, render, response_text
from harness.pairwise.setup import PairwiseJudgeSetup, declared_judge, load_setup
from harness.sandbox.workproduct import WorkProduct, file_texts
from harness.stats import wilson_interval
from harness.store import Store, Trial
from harness.store.pairwise import setup_judgements
from harness.store.tables import PairwiseJudgement, Run

CHECKS = ("repeat", "length", "position")

FILLER = "This sentence is padding added to check the grader and it says nothing about the task."
"""Neutral filler: no digits, no claims, no line breaks (it cannot end the answer early)."""


@dataclass
class CheckCount:
    n: int = 0
    moved: int = 0
    by_criterion: dict[str, list[int]] = field(default_factory=dict)
    """criterion id -> [moved, n]."""

    def as_json(self, confidence: float) -> dict[str, Any]:
        def rate(moved: int, n: int) -> dict[str, Any]:
            lo, hi = wilson_interval(moved, n, confidence) if n else (0.0, 1.0)
            return {"n": n, "moved": moved, "rate": moved / n if n else None, "ci": [lo, hi]}

        return {
            **rate(self.moved, self.n),
            "criteria": {c: rate(m, n) for c, (m, n) in sorted(self.by_criterion.items())},
        }


@dataclass
class JudgeCheckReport:
    run_id: str
    checks: dict[str, CheckCount] = field(default_factory=lambda: {c: CheckCount() for c in CHECKS})
    skipped: dict[str, int] = field(default_factory=dict)
    """why -> trials skipped."""
    usage: dict[str, float] = field(
        default_factory=lambda: {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    )
    pairwise: dict[str, CheckCount] | None = None
    """The pairwise judge's checks (``PAIR_CHECKS``; per pair of arms as 'criteria'), None
    when the run has no pairwise judge to check."""
    pairwise_setup: str | None = None
    pairwise_skipped: dict[str, int] = field(default_factory=dict)

    def as_json(self, confidence: float) -> dict[str, Any]:
        out = {
            "run_id": self.run_id,
            "confidence": confidence,
            "checks": {k: v.as_json(confidence) for k, v in self.checks.items()},
            "skipped": self.skipped,
            "judge_usage": self.usage,
        }
        if self.pairwise is not None:
            out["pairwise"] = {
                "setup": self.pairwise_setup,
                "checks": {k: v.as_json(confidence) for k, v in self.pairwise.items()},
                "skipped": self.pairwise_skipped,
            }
        return out

    def spent(self, usage: dict[str, Any]) -> None:
        """Add one judge call's tokens and cost."""
        self.usage["calls"] += usage.get("calls", 1)
        for key in ("tokens_in", "tokens_out", "cost_usd"):
            self.usage[key] += usage.get(key) or 0


PAIR_CHECKS = ("position", "repeat", "length")


def pad(answer: str | None) -> str:
    """The answer with neutral filler appended, about doubling its length (at least 400)."""
    base = answer or ""
    target = max(400, len(base))
    filler = ""
    while len(filler) < target:
        filler += " " + FILLER
    return base + filler


def _stored_judgements(trial: Trial) -> list[dict[str, Any]]:
    evidence: dict[str, Any] = dict(trial.evidence or {})
    out = []
    for v in evidence.get("graders") or []:
        judge = (v.get("details") or {}).get("judge")
        if isinstance(judge, dict) and judge.get("criteria"):
            out.append(judge)
    return out


def _params_by_setup(resolved: ResolvedSuite, task_id: str) -> dict[str, JudgeParams]:
    try:
        task = resolved.task(task_id).task
    except KeyError:
        return {}
    found = {}
    for spec in task.graders:
        if spec.type == "judge":
            params = JudgeParams.model_validate(spec.model_dump())
            found[params.setup_hash()] = params
    return found


async def _judge(
    params: JudgeParams, evidence: Evidence, report: JudgeCheckReport
) -> dict[str, bool]:
    """Criterion id -> passed, asked as the grader would (samples, seeds, majority; the
    files it reads, and its read-only tools over the work dir)."""
    verdict = await Judge(params).grade(evidence)
    report.spent(verdict.details["judge"]["usage"])
    return {c["id"]: bool(c["passed"]) for c in verdict.details["judge"]["criteria"]}


def _perturbations(
    params: JudgeParams,
) -> dict[str, Callable[[Evidence], tuple[JudgeParams, Evidence]]]:
    reversed_params = params.model_copy(update={"criteria": list(reversed(params.criteria))})

    def repeat(e: Evidence) -> tuple[JudgeParams, Evidence]:
        return params, e

    def length(e: Evidence) -> tuple[JudgeParams, Evidence]:
        return params, replace(e, answer=pad(e.answer))

    def position(e: Evidence) -> tuple[JudgeParams, Evidence]:
        return reversed_params, e

    return {"repeat": repeat, "length": length, "position": position}


async def _check_trial(
    db: Store, resolved: ResolvedSuite, trial: Trial, report: JudgeCheckReport
) -> None:
    stored = _stored_judgements(trial)
    if not stored:
        return
    setups = _params_by_setup(resolved, trial.task_id)
    for judged in stored:
        params = setups.get(str(judged.get("setup")))
        if params is None:
            _skip(report.skipped, "judge setup not in the suite (changed since the run)")
            continue
        with ExitStack() as stack:
            evidence = Evidence(
                task=resolved.task(trial.task_id).task,
                answer=trial.answer,
                trajectory=list(db.events(trial.id)) if trial.id is not None else [],
                seed=trial.seed,
            )
            if "workspace" in params.reads or params.files:
                product = _work_product(db, trial)
                if product is None:
                    _skip(report.skipped, NO_ARCHIVE)
                    continue
                stack.callback(product.close)
                evidence.files = file_texts(product, params.files, FILE_TEXT_LIMIT)
                evidence.work = WorkView(product) if params.tools else None
            await _ask_perturbed(params, judged, evidence, report)


NO_ARCHIVE = (
    "judge reads the workspace and the trial kept no work archive (graded before archives "
    "were kept, a multi-step task, or over the size cap)"
)


def _work_product(db: Store, trial: Trial) -> WorkProduct | None:
    """The trial's work archive from the store, in a temporary file (``close`` removes it);
    None when it was not kept."""
    evidence: dict[str, Any] = dict(trial.evidence or {})
    kept: dict[str, Any] = evidence.get("work_archive") or {}
    data = db.blob(kept["blob"]) if kept.get("blob") else None
    if data is None:
        return None
    fd, name = tempfile.mkstemp(prefix="harness-work-", suffix=".tar")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return WorkProduct(Path(name), str(kept["workdir"]))


async def _ask_perturbed(
    params: JudgeParams, judged: dict[str, Any], evidence: Evidence, report: JudgeCheckReport
) -> None:
    """Ask the judge each perturbed way and count the criteria that moved."""
    before = {c["id"]: bool(c["passed"]) for c in judged["criteria"]}
    for name, perturb in _perturbations(params).items():
        p, e = perturb(evidence)
        after = await _judge(p, e, report)
        count = report.checks[name]
        count.n += 1
        count.moved += any(after.get(c) != v for c, v in before.items())
        for c, v in before.items():
            cell = count.by_criterion.setdefault(c, [0, 0])
            cell[0] += after.get(c) != v
            cell[1] += 1


def _count(count: CheckCount, group: str, moved: bool) -> None:
    count.n += 1
    count.moved += moved
    cell = count.by_criterion.setdefault(group, [0, 0])
    cell[0] += moved
    cell[1] += 1


def _skip(skipped: dict[str, int], why: str) -> None:
    skipped[why] = skipped.get(why, 0) + 1


class _PairAsker:
    """Asks the pairwise judge about one stored pair again, A first, as ``harness pairwise``
    asked it (the same prompt template, seed and upstream code); nothing is stored."""

    def __init__(self, db: Store, run: Run, setup: PairwiseJudgeSetup, report: JudgeCheckReport):
        self.db, self.run, self.setup, self.report = db, run, setup, report
        self.caller = JudgeCaller(setup.model, setup.api)

    def response(self, trial_id: int) -> tuple[Trial, str]:
        trial = self.db.trial(trial_id)
        assert trial is not None  # a judgement's trials are rows of the store
        events = self.db.events(trial_id) if "conversation" in self.setup.reads else []
        return trial, response_text(trial.answer, events, self.setup.reads)

    async def ask(self, j: PairwiseJudgement, first: str, second: str, seed: int) -> str:
        """The arm the judge names ('A' = arm_a, shown first), 'tie' or 'unresolved'."""
        instruction = instruction_of(self.run.config or {}, j.task_id, j.variant)
        prompt = render(instruction, self.setup.question, self.setup.rubric, first, second)
        text, spent = await self.caller.ask(PAIR_SYSTEM, prompt, seed)
        self.report.spent(spent)
        try:
            return parse(text)[0]
        except PairwiseReplyError:
            return "unresolved"


async def _check_pairs(db: Store, run: Run, setup: PairwiseJudgeSetup, report: JudgeCheckReport):
    """The pairwise checks on every pair ``setup`` judged within ``run`` in both orders."""
    counts = report.pairwise = {c: CheckCount() for c in PAIR_CHECKS}
    report.pairwise_setup = setup.setup_hash()
    orders: dict[tuple[int, int], dict[str, PairwiseJudgement]] = {}
    for row in setup_judgements(db.engine, report.pairwise_setup, [run.id]):
        if row.run_b is None:
            orders.setdefault((row.trial_a, row.trial_b), {})[row.shown_first] = row
    asker = _PairAsker(db, run, setup, report)
    for (trial_a, trial_b), both in sorted(orders.items()):
        if "A" not in both or "B" not in both:
            _skip(report.pairwise_skipped, "the pair was judged in one order only")
            continue
        j, swapped = both["A"], both["B"]
        if "unresolved" in (j.verdict, swapped.verdict):
            _skip(report.pairwise_skipped, "a stored verdict is unresolved (it named no winner)")
            continue
        group = f"{j.arm_a} vs {j.arm_b}"
        _count(counts["position"], group, swapped.verdict != j.verdict)
        a, first = asker.response(trial_a)
        _, second = asker.response(trial_b)
        seed = a.seed % (2**31)  # the A-first call's seed (harness.pairwise.judging)
        _count(counts["repeat"], group, await asker.ask(j, first, second, seed) != j.verdict)
        padded = (first, pad(second)) if j.verdict == "A" else (pad(first), second)
        _count(counts["length"], group, await asker.ask(j, *padded, seed) != j.verdict)


def pairwise_setup(run: Run, judge_file: Path | None) -> PairwiseJudgeSetup | None:
    """The pairwise judge to check: ``judge_file``, else the one the run's suite declared."""
    if judge_file is not None:
        return load_setup(judge_file)
    declared = declared_judge(run)
    return declared[0] if declared else None


def judge_checks(
    db: Store, resolved: ResolvedSuite, run: Run, pairwise: PairwiseJudgeSetup | None = None
) -> JudgeCheckReport:
    """Re-ask the judge of every judged trial of ``run`` unchanged, padded and reordered;
    with ``pairwise``, check that judge on the pairs it judged in the run.

    Raises ``GraderError`` (one line) when a judge cannot be reached or answers garbage.
    """
    report = JudgeCheckReport(run.id)
    trials = [t for t in db.trials(run.id) if t.evidence]

    async def main() -> None:
        for trial in trials:
            await _check_trial(db, resolved, trial, report)
        if pairwise is not None:
            await _check_pairs(db, run, pairwise, report)

    anyio.run(main)
    return report


def judge_checks_text(summary: dict[str, Any]) -> str:
    """The terminal table: one line per check, then one per criterion when several."""
    level = f"{summary['confidence']:.0%}"
    lines = [f"Judge checks on run {summary['run_id']}", "  verdict moves vs the stored verdict"]
    lines.append(f"  {'check':<10} {'moved/n':>9}  rate [{level} Wilson]")
    for name, c in summary["checks"].items():
        lines.append(_line(name, c))
        if len(c["criteria"]) > 1:
            for cid, cc in c["criteria"].items():
                lines.append(_line(f"  {cid}", cc))
    for why, n in summary["skipped"].items():
        lines.append(f"  skipped {n} judgement(s): {why}")
    u = summary["judge_usage"]
    lines.append(
        f"  judge calls: {u['calls']:g}, tokens in {u['tokens_in']:g} out {u['tokens_out']:g}, "
        f"cost ${u['cost_usd']:.4f}"
    )
    lines.append("  read length and position against repeat: moves beyond the judge's")
    lines.append("  own noise are bias")
    if "pairwise" in summary:
        lines += _pairwise_lines(summary["pairwise"], level)
    return "\n".join(lines) + "\n"


def _pairwise_lines(p: dict[str, Any], level: str) -> list[str]:
    """The pairwise judge's checks: one line per check, then one per pair of arms."""
    lines = [
        f"Pairwise judge {p['setup']}",
        "  verdict moves vs the stored verdict of the pair shown A first",
        f"  {'check':<10} {'moved/n':>9}  rate [{level} Wilson]",
    ]
    for name, c in p["checks"].items():
        lines.append(_line(name, c))
        if len(c["criteria"]) > 1:
            lines += [_line(f"  {pair}", cc) for pair, cc in c["criteria"].items()]
    lines += [f"  skipped {n} pair(s): {why}" for why, n in p["skipped"].items()]
    if not p["checks"]["position"]["n"] and not p["skipped"]:
        lines.append("  no pair judged by this setup in the run (harness pairwise RUN --judge)")
    lines.append("  position reads the stored swapped order (no call); length pads the")
    lines.append("  response the stored verdict did not pick")
    return lines


def _line(name: str, c: dict[str, Any]) -> str:
    if not c["n"]:
        return f"  {name:<10} {'0/0':>9}  —"
    lo, hi = c["ci"]
    return f"  {name:<10} {c['moved']:>4}/{c['n']:<4}  {c['rate']:.0%} [{lo:.0%}, {hi:.0%}]"
