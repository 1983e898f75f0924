"""The metering proxy's overhead against a direct connection, side by side in one run.

    python benchmarks/bench_proxy.py [--calls 300] [--tokens 2000]

Against the scripted upstream (``tests/fakes/openai_server.py``, a threaded server on
loopback): ``--calls`` plain chat completions, then one stream of ``--tokens`` content
events, each made once directly and once through a ``MeteringProxy`` (metering, trajectory
event and budget check included), alternating so both see the same machine load. Prints the
median per call and per streamed event, and the ratio proxy / direct.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.agents.base import AgentContext  # noqa: E402
from harness.config.models import Arm, Budgets, ModelSettings, Price  # noqa: E402
from harness.models.proxy import metering_proxy  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, Turn  # noqa: E402


async def main(calls: int, tokens: int) -> None:
    os.environ["BENCH_PROXY_KEY"] = "sk-bench"
    with FakeOpenAI() as server:
        settings = ModelSettings(
            name="fake-model",
            base_url=server.base_url,
            api_key_env="BENCH_PROXY_KEY",
            price=Price(input=1, output=2),
        )
        server.default = Turn("ok", usage=(10, 1))
        ctx = AgentContext(
            task_id="bench",
            arm=Arm(name="a", agent="command", model=settings),
            instruction="x",
            sandbox=None,  # type: ignore[arg-type]  # the proxy never touches the sandbox
            environment=None,
            seed=1,
            budgets=Budgets(max_steps=None, max_tokens=None, max_cost_usd=None, timeout_s=None),
        )
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        async with metering_proxy(ctx, settings) as proxy, httpx.AsyncClient() as http:
            direct = (server.base_url, {"Authorization": "Bearer sk-bench"})
            proxied = (proxy.base_url, {"Authorization": f"Bearer {proxy.token}"})

            async def one(target: tuple[str, dict]) -> float:
                t0 = time.perf_counter()
                r = await http.post(f"{target[0]}/chat/completions", json=body, headers=target[1])
                r.raise_for_status()
                return time.perf_counter() - t0

            for target in (direct, proxied):  # warm both connections
                await one(target)
            d_calls, p_calls = [], []
            for _ in range(calls):
                d_calls.append(await one(direct))
                p_calls.append(await one(proxied))

            server.default = Turn("x" * tokens, usage=(10, tokens), chunk_chars=1)

            async def stream(target: tuple[str, dict]) -> float:
                t0 = time.perf_counter()
                payload = {**body, "stream": True}
                async with http.stream(
                    "POST", f"{target[0]}/chat/completions", json=payload, headers=target[1]
                ) as r:
                    async for _ in r.aiter_raw():
                        pass
                return (time.perf_counter() - t0) / tokens

            d_tok, p_tok = [], []
            for _ in range(5):
                d_tok.append(await stream(direct))
                p_tok.append(await stream(proxied))
    dc, pc = statistics.median(d_calls), statistics.median(p_calls)
    dt, pt = statistics.median(d_tok), statistics.median(p_tok)
    print(
        f"per call (median of {calls}): direct {dc * 1e3:.2f} ms, proxy {pc * 1e3:.2f} ms, "
        f"ratio {pc / dc:.2f} (+{(pc - dc) * 1e3:.2f} ms)"
    )
    print(
        f"per streamed event (median of 5 streams × {tokens}): direct {dt * 1e6:.1f} µs, "
        f"proxy {pt * 1e6:.1f} µs, ratio {pt / dt:.2f} (+{(pt - dt) * 1e6:.1f} µs)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args()
    anyio.run(main, args.calls, args.tokens)
