"""The simulated user of conversational (tau-bench style) tasks.

A task with ``user:`` talks to the agent in turns. Without ``user.goal`` the task's
instruction is the user's opening message and also its goal. With ``user.goal`` (tau-bench's
way) the goal is private: the agent never sees it, and the user writes the opening itself
(``opening()``: a model from its goal, seeded; a script's first turn). After each agent reply the user answers, until it ends the conversation
(a message containing ``###STOP###``) or its turns run out.

- **Scripted** (``user.turns``): the turns are said in order; after the last one the
  conversation ends at the agent's next reply.
- **Model-backed** (``user.model``): a model plays the user, from ``user.persona`` and the
  task's instruction as its goal, at its own temperature, with the trial seed passed to the
  model as ``seed``. Its tokens are recorded on the ``user`` events (``args.usage``) but are
  not charged to the agent's budget: the user is part of the environment, not the arm.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypedDict

from harness.config.models import ModelSettings, UserScript
from harness.models.chat import ChatMessage

if TYPE_CHECKING:
    from harness.models.client import ChatClient

STOP = "###STOP###"
DEFAULT_MAX_TURNS = 10

USER_PROMPT = """You are playing a customer talking to a customer-service agent.
{persona}
Your goal (do not reveal it all at once; share details only when asked):
{instruction}

Rules:
- Write only the customer's next message, short and natural.
- Never invent details that are not in your goal.
- When your goal is fully handled, or the agent cannot help, reply with exactly {stop}.
"""


class UserCallUsage(TypedDict):
    """What one model-backed user turn cost (kept apart from the agent's own usage)."""

    tokens_in: int
    tokens_cached: int
    tokens_out: int
    cost_usd: float | None


class UserTurnInfo(TypedDict, total=False):
    """The ``args`` of a ``user`` trajectory event: how the user's turn came about."""

    reason: str
    """Why the conversation ended without words: ``script_exhausted``, ``max_user_turns``."""
    turn: int
    """The user's turn number (0 for the opening)."""
    opening: bool
    stop: bool
    """The user ended the conversation."""
    model: str
    seed: int | None
    temperature: float | None
    usage: UserCallUsage
    latency_s: float


def with_turn_info(info: UserTurnInfo, extra: UserTurnInfo) -> UserTurnInfo:
    """``info`` with ``extra``'s keys added or replaced (both checked against the shape)."""
    return {**info, **extra}


@dataclass
class UserTurn:
    """What the user says next. ``stop`` ends the conversation (``text`` may be empty)."""

    text: str
    stop: bool = False
    info: UserTurnInfo = field(default_factory=lambda: UserTurnInfo())


OPENING_REQUEST = (
    "The conversation starts now. Write your first message to the agent, as the customer."
)


class SimulatedUser(Protocol):
    async def opening(self) -> UserTurn:
        """The user's first message, when the user (not the task) opens the conversation."""
        ...

    async def reply(self, agent_message: str) -> UserTurn: ...


class ScriptedUser:
    """Says ``turns`` in order; ends the conversation when they run out or one says STOP."""

    def __init__(self, turns: list[str]):
        self._turns = list(turns)
        self._next = 0

    async def opening(self) -> UserTurn:
        return await self.reply("")

    async def reply(self, agent_message: str) -> UserTurn:
        if self._next >= len(self._turns):
            return UserTurn("", stop=True, info={"reason": "script_exhausted"})
        text = self._turns[self._next]
        self._next += 1
        return UserTurn(
            text.replace(STOP, "").strip(), stop=STOP in text, info={"turn": self._next}
        )


class ModelUser:
    """A model playing the user: its own settings and temperature, seeded with the trial."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        instruction: str,
        persona: str | None,
        seed: int,
        max_turns: int = DEFAULT_MAX_TURNS,
        client: ChatClient | None = None,
        opens: bool = False,
    ):
        from harness.models.settings import expand_env

        # The client (and its API-key check) is made at the first turn: an agent that never
        # talks to the user needs no key for it.
        self._client = client
        self.settings = client.settings if client is not None else expand_env(settings)
        self.seed = seed
        self.max_turns = max_turns
        self._turns = 0
        system = USER_PROMPT.format(
            persona=persona or "", instruction=instruction, stop=STOP
        ).replace("\n\n\n", "\n\n")
        # The user's own view: the agent speaks as "user", the simulated user as "assistant".
        self._messages: list[ChatMessage] = [{"role": "system", "content": system}]
        if not opens:  # the task's instruction was the opening
            self._messages.append({"role": "assistant", "content": instruction})

    async def opening(self) -> UserTurn:
        return await self._say(OPENING_REQUEST)

    async def reply(self, agent_message: str) -> UserTurn:
        return await self._say(agent_message)

    async def _say(self, agent_message: str) -> UserTurn:
        if self._turns >= self.max_turns:
            return UserTurn("", stop=True, info={"reason": "max_user_turns"})
        self._turns += 1
        self._messages.append({"role": "user", "content": agent_message})
        start = time.monotonic()
        if self._client is None:
            from harness.models.client import ChatClient

            self._client = ChatClient(self.settings)
        response = await self._client.chat(self._messages, seed=self.seed)
        text = (response.content or "").strip()
        self._messages.append({"role": "assistant", "content": text})
        from harness.models.pricing import cost, price_for

        usage = response.usage
        info: UserTurnInfo = {
            "model": self.settings.name,
            "seed": self.seed,
            "temperature": self.settings.temperature,
            "turn": self._turns,
            "usage": {
                "tokens_in": usage.input_tokens,
                "tokens_cached": usage.cached_tokens,
                "tokens_out": usage.output_tokens,
                "cost_usd": cost(usage, price_for(self.settings)),
            },
            "latency_s": time.monotonic() - start,
        }
        return UserTurn(text.replace(STOP, "").strip(), stop=STOP in text, info=info)


def make_user(
    script: UserScript | None, *, instruction: str, seed: int, max_turns: int | None = None
) -> SimulatedUser | None:
    """The simulated user a task declares, or None for a single-shot task. With
    ``script.goal`` the user's goal is that (private) text and it opens the conversation."""
    if script is None:
        return None
    if script.model is not None:
        return ModelUser(
            script.model,
            instruction=script.goal or instruction,
            persona=script.persona,
            seed=seed,
            max_turns=max_turns or max(DEFAULT_MAX_TURNS, len(script.turns)),
            opens=script.goal is not None,
        )
    return ScriptedUser(script.turns)


__all__ = ["STOP", "ModelUser", "ScriptedUser", "SimulatedUser", "UserTurn", "make_user"]
