"""Agents that attack the harness's limits and its text handling, for ``test_limits.py``.

``TextProbe`` (a ``module:Class`` agent, run in its own process) makes a file name that is
not UTF-8 through the shell environment's own ``bash`` tool, or answers or says text with a
lone surrogate. The output flood and the disk filler are plain shell programs run by the
``command`` agent inside the sandbox (``COMMANDS``).
"""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.config.models import Options

FLOOD_BYTES = 512 << 20
"""What the flood prints on stdout, and as much again on stderr: 1 GiB in all."""

COMMANDS = {
    # 1 GiB in all, then a last line the harness must still see (the answer).
    "flood": (
        f"head -c {FLOOD_BYTES} /dev/zero; echo; head -c {FLOOD_BYTES} /dev/zero >&2; "
        "echo flood-done"
    ),
    # Fill every writable place until the disk refuses, then report what it got.
    "fill_disk": (
        "dd if=/dev/zero of=data/fill bs=1M count=1024 2>&1 | grep -E 'space|copied'; "
        "dd if=/dev/zero of=/tmp/fill bs=1M count=1024 2>&1 | grep -E 'space|copied'; "
        "echo filled"
    ),
}

BAD_NAME = "touch \"etc/$(printf '\\377\\376').conf\" \"app/caf$(printf '\\351').py\"; ls etc app"


class TextParams(Options):
    probe: str


class TextProbe(Agent):
    """``probe``: ``bad_name`` (files named with bytes that are not UTF-8, made through the
    ``bash`` tool), ``surrogate_answer`` (an answer with a lone surrogate) or
    ``surrogate_say`` (a message with lone surrogates and NUL, then a plain answer)."""

    name = "text-probe"
    Params = TextParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        probe = ctx.params["probe"]
        if probe == "bad_name":
            result = await ctx.call_tool("bash", {"command": BAD_NAME})
            return AgentResult(answer=result.output.strip().splitlines()[-1])
        if probe == "surrogate_answer":
            return AgentResult(answer="done \ud800")
        ctx.say("I did it \udcff\ud800 \x00 really")
        return AgentResult(answer="done")


__all__ = ["COMMANDS", "FLOOD_BYTES", "TextProbe"]
