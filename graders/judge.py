"""judge: a model grades the trial against a rubric written in the task file.

The judge has its own ``model:`` block (its API, key variable, price), separate from the
arm's: its calls go out through the metering proxy's upstream code (``harness.models
.upstream``: the real key added there, transient failures retried) in one of the three
APIs the proxy serves (chat completions, Responses, Messages), and their tokens and cost
are kept on the verdict and the trial row apart from the agent's. It reads the
conversation, the answer and optionally the final workspace (the files taken out of the
agent's sandbox as data after its turn: nothing runs in the agent's sandbox); with
``tools`` it explores that work dir itself, with read-only tools over its archive
(``graders.judge_tools``), before it answers.

``samples: n`` asks n times (seeded where the API takes a seed: the trial's seed plus the
sample index) and reduces each criterion by majority (pass/fail) or mean (scales); the
verdict records how often the samples disagreed. The setup (model, API, settings, prompt
template, rubric, samples, tools) is hashed: ``JudgeParams.setup_hash`` pins it in the run config
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
from graders.judge_call import JudgeAPI, JudgeCaller, model_setup, payload
from graders.judge_prompt import (
    DEFAULT_TEMPLATE,
    SYSTEM,
    Criterion,
    CriterionReply,
    JudgeReplyError,
    parse,
    render,
)
from graders.judge_tools import NUDGE, TOOLS, explore
from graders.judge_workspace import WorkView
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
    tools: bool = False
    """with ``workspace`` in reads: the judge explores the agent's final work dir with
    read-only tools (list_files, read_file, grep) over its archive, before it answers"""
    tool_steps: int = Field(8, ge=1, le=50)
    """turns of tool calls per judgement; then the judge is told to answer, without tools"""
    tool_bytes: int = Field(100_000, ge=1_000, le=2_000_000)
    """bytes of tool replies per judgement (one read_file returns at most 20,000)"""
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
        if self.tools and "workspace" not in self.reads:
            raise ValueError("tools explore the workspace: add workspace to reads")
        if self.prompt is not None:
            for slot in ("{instruction}", "{rubric}", "{material}"):
                if slot not in self.prompt:
                    raise ValueError(f"prompt must contain {slot}")
        return self

    def models(self) -> list[ModelSettings]:
        return [self.model]

    def workspace_files(self) -> list[str]:
        return list(self.files)

    def reads_workdir(self) -> bool:
        return self.tools

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
            **(
                {"tools": TOOLS, "tool_nudge": NUDGE}
                | {"tool_steps": self.tool_steps, "tool_bytes": self.tool_bytes}
                if self.tools
                else {}
            ),
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
        if p.tools and evidence.work is None:
            raise GraderError(
                "the judge's workspace tools have no work dir to read (a task without an "
                "environment, or a multi-step task)"
            )
        prompt = render(p.prompt, p.criteria, p.reads, evidence, p.files, tools=p.tools)
        return await self.judge(prompt, evidence.seed, evidence.work if p.tools else None)

    async def judge(self, prompt: str, seed: int | None, work: WorkView | None = None) -> Verdict:
        """The verdict on a rendered ``prompt``: ``samples`` asks (seeds ``seed``, ``seed`` + 1,
        ...) reduced by majority or mean; with ``work``, each ask is a conversation in which
        the judge explores it with tools. Public for checks that re-ask a judge on changed
        input (``harness validate --judge-checks``)."""
        p = self.params
        samples: list[list[CriterionReply]] = []
        calls: list[dict[str, Any]] = []
        explored: list[dict[str, Any]] = []
        for k in range(p.samples):
            sample_seed = None if seed is None else (seed + k) % (2**31)
            if work is None:
                text, spent = await self._ask(prompt, sample_seed)
                calls.append(spent)
            else:
                body = payload(p.model, p.api, SYSTEM, prompt, sample_seed)
                seen = await explore(
                    self._caller.send, p.api, body, work, p.tool_steps, p.tool_bytes
                )
                text = seen.text
                calls.extend(seen.spent)
                explored.append(
                    {"sample": k, "steps": seen.steps, "bytes_read": seen.bytes_read}
                    | {"limits_hit": seen.limits, "calls": seen.log}
                )
            try:
                samples.append(parse(text, p.criteria))
            except JudgeReplyError as exc:
                raise GraderError(f"judge answered garbage: {exc}") from None
        verdict = self._verdict(samples, calls)
        if work is not None:
            verdict.details["judge"]["tools"] = explored
            hit = sorted({limit for e in explored for limit in e["limits_hit"]})
            verdict.reasons += [f"judge's tools: {limit}" for limit in hit]
        return verdict

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
