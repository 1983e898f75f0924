"""llm: a tool-calling agent on any OpenAI-compatible chat-completions endpoint.

The loop: system prompt (the environment's policy and a short harness preamble), the task
instruction as the user's message, the environment's tools as functions. Each model call is
recorded as a ``model_call`` event and charged (tokens, cost, one step: a step is one model
call for every agent), each tool call goes through ``ctx.call_tool`` (recorded). The agent stops at a final answer (an assistant
message without tool calls) or when a budget runs out. A malformed tool call (arguments that
are not JSON, an unknown tool) is answered with a tool error message, counted in
``ctx.usage.malformed_tool_calls``, and never crashes the trial.

Conversational tasks (``task.user``): the instruction is the user's opening message (with a
private ``user.goal``, the simulated user writes the opening and the agent never sees the
goal); each
final message goes to the simulated user (``harness.agents.user``) whose reply continues the
conversation, until the user says ``###STOP###`` or its turns run out.

Params (``arm.params``):
  system_prompt      replaces the harness preamble (the policy is still prepended)
  confidence         true: ask for a final ``CONFIDENCE: <p>`` line (parsed either way)
  send_seed          pass the trial seed to the model as ``seed`` (default true)
  max_model_calls    a hard stop on model calls per trial (default 200; ``BudgetExceeded``)
  max_user_turns     cap on model-backed user turns (default: 10)
  max_tool_output_chars  tool output fed back to the model is cut to this (default 20000)
  backoff_base_s     base of the client's retry backoff, seconds (default 0.5)
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from pydantic import Field

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.agents.user import STOP, UserTurnInfo, with_turn_info
from harness.config.models import Options, Price, ToolSpec
from harness.errors import BudgetExceeded, ConfigError
from harness.models.chat import ChatMessage, ToolSchema

if TYPE_CHECKING:
    from harness.models.client import ChatClient, ToolCallRequest

PREAMBLE = (
    "You are an agent being evaluated on a task. Act only through the provided tools; "
    "their results are the ground truth about the environment. Follow the policy above, "
    "if any. When you are done, reply with your final answer to the user and no tool call."
)
CONFIDENCE_REQUEST = (
    "End your final answer with a line 'CONFIDENCE: <p>', where <p> is a number between 0 "
    "and 1: the probability that you completed the task correctly."
)
_CONFIDENCE = re.compile(
    r"^[ \t*_>-]*confidence[ \t*_]*[:=][ \t*_]*([0-9]*\.?[0-9]+)[ \t]*(%?)[ \t*_.]*$",
    re.IGNORECASE | re.MULTILINE,
)


def split_confidence(text: str | None) -> tuple[str | None, float | None]:
    """Split a final message into (answer without the confidence line, confidence in [0, 1]).

    Accepts ``CONFIDENCE: 0.8``, ``Confidence = 80%``; a bare number above 1 and up to 100
    is read as a percentage. The last such line counts; out-of-range values give None.
    """
    if text is None:
        return None, None
    matches = list(_CONFIDENCE.finditer(text))
    if not matches:
        return text.strip() or None, None
    last = matches[-1]
    value = float(last.group(1))
    if last.group(2) or 1.0 < value <= 100.0:
        value /= 100.0
    confidence = value if 0.0 <= value <= 1.0 else None
    answer = _CONFIDENCE.sub("", text).strip()
    return answer or None, confidence


def tool_schema(spec: ToolSpec) -> ToolSchema:
    """An environment tool as an OpenAI function definition."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def system_prompt(ctx: AgentContext, params: LLMParams) -> str:
    parts = [ctx.policy.strip(), params.system_prompt or PREAMBLE]
    if params.confidence:
        parts.append(CONFIDENCE_REQUEST)
    return "\n\n".join(p for p in parts if p)


class LLMParams(Options):
    """``params`` of the llm agent."""

    system_prompt: str | None = Field(None, description="replaces the harness preamble")
    confidence: bool = Field(False, description="ask for a final CONFIDENCE: <p> line")
    send_seed: bool = Field(True, description="pass the trial seed to the model as `seed`")
    max_model_calls: int = Field(200, ge=1, description="hard stop on model calls per trial")
    max_user_turns: int | None = Field(None, ge=0, description="cap on model-backed user turns")
    max_tool_output_chars: int = Field(20_000, ge=1, description="tool output fed back, cut")
    backoff_base_s: float | None = Field(None, ge=0, description="client retry backoff base")


class LLMAgent(Agent):
    name = "llm"
    Params = LLMParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        from harness.models.client import ChatClient
        from harness.models.pricing import price_for

        settings = ctx.model
        if settings is None:
            raise ConfigError("suite", f"arms.{ctx.arm.name}.model", "the llm agent needs a model")
        params = self.params_as(ctx, LLMParams)
        client = ChatClient(settings, backoff_base_s=params.backoff_base_s)
        settings = client.settings  # ${VAR} references resolved
        price = price_for(settings)
        tools = [tool_schema(t) for t in ctx.tools]
        user = ctx.user  # built by the trial from the task (its goal stays private)
        opening, info = ctx.instruction, UserTurnInfo(turn=0)
        if user is not None and ctx.user_opens:
            first = await user.opening()
            opening, info = first.text, with_turn_info(first.info, {"turn": 0, "opening": True})
        messages: list[ChatMessage] = [
            {"role": "system", "content": system_prompt(ctx, params)},
            {"role": "user", "content": opening},
        ]
        if user is not None:
            ctx.trajectory.record("user", content=opening, args=info)

        answer: str | None = None
        confidence: float | None = None
        ended_by = "final_answer"
        while True:
            text = await self._until_reply(ctx, client, messages, tools, price)
            said, stated = split_confidence(text)
            if stated is not None:
                confidence = stated
            if said:
                ctx.say(said)
                answer = said
            if user is None:
                break
            turn = await user.reply(said or "")
            if turn.text or turn.stop:
                ctx.trajectory.record(
                    "user",
                    content=turn.text or STOP,
                    args=with_turn_info(turn.info, {"stop": turn.stop}),
                )
            if turn.stop:
                ended_by = "user_stop"
                break
            messages.append({"role": "user", "content": turn.text})

        return AgentResult(
            answer=answer,
            confidence=confidence,
            info={"model": settings.name, "ended_by": ended_by, "price_known": price is not None},
        )

    async def _until_reply(
        self,
        ctx: AgentContext,
        client: ChatClient,
        messages: list[ChatMessage],
        tools: list[ToolSchema],
        price: Price | None,
    ) -> str | None:
        """Call the model and run its tool calls until it replies without one."""
        from harness.models.metering import meter_call

        params = self.params_as(ctx, LLMParams)
        max_calls = params.max_model_calls
        seed = ctx.seed if params.send_seed else None
        while True:
            if ctx.usage.model_calls >= max_calls:
                raise BudgetExceeded("max_model_calls", f"{ctx.usage.model_calls} model calls")
            response = await client.chat(messages, tools=tools or None, seed=seed)
            messages.append(response.message)
            meter_call(
                ctx,
                response.usage,
                price,
                latency_s=response.latency_s,
                content=response.content,
                info={
                    "model": response.model or client.settings.name,
                    "finish_reason": response.finish_reason,
                    "tool_calls": [c.name for c in response.tool_calls],
                    "attempts": response.attempts,
                    "seed": seed,
                },
                steps=1,
            )
            if not response.tool_calls:
                return response.content
            for call in response.tool_calls:
                output = await self._run_tool(ctx, call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})

    async def _run_tool(self, ctx: AgentContext, call: ToolCallRequest) -> str:
        """Execute one tool call; a malformed one becomes an error message for the model."""
        limit = self.params_as(ctx, LLMParams).max_tool_output_chars
        problem: str | None = None
        args: object = None
        if not call.name:
            problem = "error: the tool call names no function"
        else:
            try:
                args = json.loads(call.arguments) if call.arguments.strip() else {}
            except ValueError as exc:
                problem = (
                    f"error: the arguments of '{call.name}' are not valid JSON ({exc}); "
                    "send one JSON object matching the tool's parameters"
                )
        if problem is not None:
            ctx.usage.malformed_tool_calls += 1
            ctx.trajectory.record(
                "tool_call",
                tool=call.name or "?",
                args={"_raw_arguments": call.arguments[:2000]},
                content=problem,
                ok=False,
            )
            return problem
        result = await ctx.call_tool(call.name, args)
        output = result.output
        if not result.ok and not output.startswith("error"):
            output = f"error (exit {result.exit_code}):\n{output}"
        if len(output) > limit:
            output = output[:limit] + f"\n…[cut, {len(output) - limit} more characters]"
        return output


__all__ = ["LLMAgent", "split_confidence", "system_prompt", "tool_schema"]
