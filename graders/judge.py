"""judge: a model grades the trial against a rubric written in the task file.

The judge has its own ``model:`` block (its API, key variable, price), separate from the
arm's: its calls go out through the metering proxy's upstream code (``harness.models
.upstream``: the real key added there, transient failures retried) in one of the three
APIs the proxy serves (chat completions, Responses, Messages), and their tokens and cost
are kept on the verdict and the trial row apart from the agent's. It reads the
conversation, the answer and optionally the final workspace (the files taken out of the
agent's sandbox as data after its turn: nothing runs in the agent's sandbox).

``samples: n`` asks n times (seeded where the API takes a seed: the trial's seed plus the
sample index) and reduces each criterion by majority (pass/fail) or mean (scales); the
verdict records how often the samples disagreed. The setup (model, API, settings, prompt
template, rubric, samples) is hashed: ``JudgeParams.setup_hash`` pins it in the run config
and the lock, so runs judged differently are never paired silently.

A judge that cannot be reached, answers garbage, or cannot apply a criterion raises
``GraderError``: the trial is ``grader_error`` (unresolved), never the agent's failure.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from graders.base import Evidence, GraderParams, Verdict
from graders.judge_call import JudgeAPI, JudgeCaller, model_setup
from graders.judge_prompt import (
    DEFAULT_TEMPLATE,
    SYSTEM,
    Criterion,
    CriterionReply,
    JudgeReplyError,
    parse,
    render,
)
from harness.config.models import ModelSettings
from harness.errors import GraderError

Reading = Literal["conversation", "answer", "workspace"]
DEFAULT_READS: tuple[Reading, ...] = ("conversation", "answer")


class JudgeParams(GraderParams):
    type: Literal["judge"] = "judge"
    model: ModelSettings
    """the judge's own endpoint: name, base_url, api_key_env, price (separate from the
    arm's model; api: anthropic for Messages)"""
    api: JudgeAPI = "chat"
    """which API the judge speaks: chat (completions), responses, or messages (Anthropic)"""
    criteria: list[Criterion] = Field(min_length=1)
    """the rubric; the trial passes this grader when every criterion passes"""
    reads: list[Reading] = Field(default_factory=lambda: list(DEFAULT_READS))
    """what the judge is shown: the conversation, the final answer, the final workspace
    (files taken out of the agent's sandbox as data, read-only); empty only with files"""
    files: list[str] = Field(default_factory=list)
    """files of the agent's work whose text the judge reads (relative to the work dir, or
    absolute), taken out of its sandbox after its turn as data; one the agent did not
    leave fails every criterion without asking the judge"""
    samples: int = Field(1, ge=1, le=15)
    """judgements per trial, reduced by majority (pass/fail) or mean (scales)"""
    prompt: str | None = None
    """a prompt template of your own ({instruction}, {rubric}, {material}); default: the
    harness's"""

    @model_validator(mode="after")
    def _api(self) -> JudgeParams:
        wants = "anthropic" if self.api == "messages" else "openai"
        if self.model.api != wants:
            raise ValueError(f"api '{self.api}' needs model.api: {wants}")
        if not self.reads and not self.files:
            raise ValueError("reads is empty and no files are named: the judge would see nothing")
        if self.prompt is not None:
            for slot in ("{instruction}", "{rubric}", "{material}"):
                if slot not in self.prompt:
                    raise ValueError(f"prompt must contain {slot}")
        return self

    def models(self) -> list[ModelSettings]:
        return [self.model]

    def workspace_files(self) -> list[str]:
        return list(self.files)

    def setup(self) -> dict[str, Any]:
        """What decides the judge's verdicts (the API key variable and price do not)."""
        return {
            **model_setup(self.model, self.api),
            "prompt": self.prompt or DEFAULT_TEMPLATE,
            "system": SYSTEM,
            "criteria": [c.model_dump() for c in self.criteria],
            "reads": self.reads,
            "samples": self.samples,
            # Only when named: the setups of judges without files hash as they always did.
            **({"files": self.files} if self.files else {}),
        }

    def judge_setup(self) -> str | None:
        return self.setup_hash()

    def setup_hash(self) -> str:
        text = json.dumps(self.setup(), sort_keys=True, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


class Judge:
    type_name: ClassVar[str] = "judge"
    version: ClassVar[str] = "1"
    Params: ClassVar[type[GraderParams]] = JudgeParams

    def __init__(self, params: JudgeParams):
        self.params = params
        self._caller = JudgeCaller(params.model, params.api)

    async def _ask(self, prompt: str, seed: int | None) -> tuple[str | None, dict[str, Any]]:
        return await self._caller.ask(SYSTEM, prompt, seed)

    async def grade(self, evidence: Evidence) -> Verdict:
        p = self.params
        missing = [f for f in p.files if evidence.files.get(f) is None]
        if missing:  # nothing to judge: the agent's failure, as missing tests output is
            why = f"the agent left no file {missing[0]} (the judge was not asked)"
            return self._verdict([], [], unjudged=why)
        return await self.judge(
            render(p.prompt, p.criteria, p.reads, evidence, p.files), evidence.seed
        )

    async def judge(self, prompt: str, seed: int | None) -> Verdict:
        """The verdict on a rendered ``prompt``: ``samples`` asks (seeds ``seed``, ``seed`` + 1,
        ...) reduced by majority or mean. Public for checks that re-ask a judge on changed
        input (``harness validate --judge-checks``)."""
        samples: list[list[CriterionReply]] = []
        calls: list[dict[str, Any]] = []
        for k in range(self.params.samples):
            text, spent = await self._ask(prompt, None if seed is None else (seed + k) % (2**31))
            calls.append(spent)
            try:
                samples.append(parse(text, self.params.criteria))
            except JudgeReplyError as exc:
                raise GraderError(f"judge answered garbage: {exc}") from None
        return self._verdict(samples, calls)

    def _verdict(
        self,
        samples: list[list[CriterionReply]],
        calls: list[dict[str, Any]],
        unjudged: str | None = None,
    ) -> Verdict:
        """The verdict from the samples' replies; ``unjudged``: the judge was not asked
        (why), every criterion fails with that reason."""
        p = self.params
        results, reasons, disagreed = [], [], 0
        for i, c in enumerate(p.criteria):
            if unjudged is not None:
                results.append(
                    {"id": c.id, "passed": False, "value": None, "votes": [], "disagreed": False}
                    | {"reasons": [unjudged]}
                )
                reasons.append(f"{c.id}: {unjudged}")
                continue
            replies = [s[i] for s in samples]
            unusable = [r for r in replies if r.value is None]
            if len(unusable) * 2 >= len(replies):
                raise GraderError(
                    f"the judge could not apply criterion '{c.id}': {unusable[0].reason[:200]}"
                )
            values = [r.value for r in replies if r.value is not None]
            votes = [c.passes(v) for v in values]
            if c.scale == "binary":
                passed = sum(votes) * 2 > len(votes)
                value = float(passed)
            else:
                value = sum(values) / len(values)
                passed = c.passes(value)
            split = len(set(votes)) > 1
            disagreed += split
            results.append(
                {
                    "id": c.id,
                    "passed": passed,
                    "value": value,
                    "votes": votes,
                    "disagreed": split,
                    "reasons": [r.reason for r in replies],
                }
            )
            if not passed:
                reasons.append(f"{c.id}: {replies[0].reason}")
        usage = _sum_usage(calls)
        flags = [bool(r["passed"]) for r in results]
        return Verdict(
            grader=p.name or self.type_name,
            passed=all(flags),
            score=sum(flags) / len(flags),
            reasons=reasons,
            details={
                "judge": {
                    "setup": p.setup_hash(),
                    "model": p.model.name,
                    "api": p.api,
                    "samples": p.samples,
                    "criteria": results,
                    "criteria_disagreed": disagreed,
                    "usage": usage,
                }
            },
            version=self.version,
        )


def _sum_usage(calls: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": len(calls)}
    for key in ("tokens_in", "tokens_cached", "tokens_out", "cost_usd", "latency_s"):
        values = [c[key] for c in calls]
        out[key] = None if any(v is None for v in values) else sum(values)
    return out
