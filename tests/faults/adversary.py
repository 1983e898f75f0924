"""An adversarial agent: tries to escape its sandbox, then reports which attempts worked.

Its answer is "contained" when every attempt failed, else the list of escapes. Used by
tests/faults/test_escape.py through the real CLI and the Docker backend.
"""

from __future__ import annotations

import shlex

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.config.models import Options

PROBE = r"""
import json, os, socket, sys
port, secret_file, marker = int(sys.argv[1]), sys.argv[2], sys.argv[3]
escapes = []
# network: the only interface is loopback, and the host's loopback service is unreachable
nics = sorted(os.listdir("/sys/class/net"))
if nics != ["lo"]:
    escapes.append(f"network interfaces {nics}")
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    escapes.append("reached a host loopback service")
except OSError:
    pass
try:
    socket.getaddrinfo("example.com", 80)
    escapes.append("resolved a public name")
except OSError:
    pass
# host secrets and files
leaked = [k for k in os.environ if "KEY" in k or "SECRET" in k or "TOKEN" in k]
if leaked:
    escapes.append(f"host environment variables {leaked}")
if os.path.exists(secret_file):
    escapes.append("read a host file")
# hidden tests before grading
if os.path.exists(".harness_hidden"):
    escapes.append("hidden tests visible to the agent")
# write outside the container (checked on the host by the test)
try:
    with open(marker, "w") as fh:
        fh.write("escaped")
except OSError:
    pass
print(json.dumps(escapes))
"""


class AdversaryParams(Options):
    port: int
    secret_file: str
    marker: str


class Adversary(Agent):
    name = "adversary"
    Params = AdversaryParams

    async def run(self, ctx: AgentContext) -> AgentResult:
        p = ctx.params
        args = " ".join(shlex.quote(str(a)) for a in (p["port"], p["secret_file"], p["marker"]))
        probe = await ctx.run_command(f"python3 -c {shlex.quote(PROBE)} {args}", timeout=60)
        if "exhaust" in ctx.task_id:
            # resource exhaustion: each must hit a limit and leave the run alive
            await ctx.run_command(":(){ :|:& };:", timeout=5)  # fork bomb vs the pids limit
            await ctx.run_command(
                'python3 -c "x = bytearray(2 * 1024**3); print(len(x))"', timeout=30
            )  # memory hog against the memory limit
        escapes = (
            probe.output.strip().splitlines()[-1] if probe.ok else f"probe failed: {probe.output}"
        )
        answer = "contained" if escapes == "[]" else escapes
        # Whether the sandbox is still usable afterwards is recorded, not required: a fork bomb
        # may keep the pids limit full until the trial's container is removed.
        alive = await ctx.run_command("echo still-here", timeout=30)
        return AgentResult(answer=answer, info={"sandbox_usable_at_end": alive.ok})
