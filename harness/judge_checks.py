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
cost are summed and reported. Trials whose setup is no longer in the suite, or whose
judge reads the workspace or its files (not stored with the trial), are skipped and
counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from graders.base import Evidence
from graders.judge import Judge, JudgeParams
from graders.judge_prompt import render
from harness.config.loader import ResolvedSuite
from harness.stats import wilson_interval
from harness.store import Store, Trial

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

    def as_json(self, confidence: float) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "confidence": confidence,
            "checks": {k: v.as_json(confidence) for k, v in self.checks.items()},
            "skipped": self.skipped,
            "judge_usage": self.usage,
        }


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
    """Criterion id -> passed, asked as the grader would (samples, seeds, majority)."""
    prompt = render(params.prompt, params.criteria, params.reads, evidence)
    verdict = await Judge(params).judge(prompt, evidence.seed)
    usage = verdict.details["judge"]["usage"]
    report.usage["calls"] += usage["calls"]
    for key in ("tokens_in", "tokens_out", "cost_usd"):
        report.usage[key] += usage.get(key) or 0
    return {c["id"]: bool(c["passed"]) for c in verdict.details["judge"]["criteria"]}


def _perturbations(
    params: JudgeParams,
) -> dict[str, Callable[[Evidence], tuple[JudgeParams, Evidence]]]:
    reversed_params = params.model_copy(update={"criteria": list(reversed(params.criteria))})

    def repeat(e: Evidence) -> tuple[JudgeParams, Evidence]:
        return params, e

    def length(e: Evidence) -> tuple[JudgeParams, Evidence]:
        return params, Evidence(
            task=e.task, answer=pad(e.answer), trajectory=e.trajectory, seed=e.seed
        )

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
            why = "judge setup not in the suite (changed since the run)"
            report.skipped[why] = report.skipped.get(why, 0) + 1
            continue
        if "workspace" in params.reads or params.files:
            why = "judge reads the workspace (not stored with the trial)"
            report.skipped[why] = report.skipped.get(why, 0) + 1
            continue
        before = {c["id"]: bool(c["passed"]) for c in judged["criteria"]}
        evidence = Evidence(
            task=resolved.task(trial.task_id).task,
            answer=trial.answer,
            trajectory=list(db.events(trial.id)) if trial.id is not None else [],
            seed=trial.seed,
        )
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


def judge_checks(db: Store, resolved: ResolvedSuite, run_id: str) -> JudgeCheckReport:
    """Re-ask the judge of every judged trial of ``run_id`` unchanged, padded and reordered.

    Raises ``GraderError`` (one line) when the judge cannot be reached or answers garbage.
    """
    report = JudgeCheckReport(run_id)
    trials = [t for t in db.trials(run_id) if t.evidence]

    async def main() -> None:
        for trial in trials:
            await _check_trial(db, resolved, trial, report)

    anyio.run(main)
    return report


def judge_checks_text(summary: dict[str, Any]) -> str:
    """The terminal table: one line per check, then one per criterion when several."""
    level = f"{summary['confidence']:.0%}"
    lines = [f"Judge checks on run {summary['run_id']} (verdict moves vs the stored verdict)"]
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
    lines.append(
        "  read length and position against repeat: moves beyond the judge's own noise are bias"
    )
    return "\n".join(lines) + "\n"


def _line(name: str, c: dict[str, Any]) -> str:
    if not c["n"]:
        return f"  {name:<10} {'0/0':>9}  —"
    lo, hi = c["ci"]
    return f"  {name:<10} {c['moved']:>4}/{c['n']:<4}  {c['rate']:.0%} [{lo:.0%}, {hi:.0%}]"
