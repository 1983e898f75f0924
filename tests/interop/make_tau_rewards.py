"""Writes fixtures/tau_bench_rewards.json: tau-bench's own reward for every constructed
trajectory (tau_support.KINDS) of every task of both domains' test splits.

tau-bench's reward hashes the whole database twice per trajectory (about half a second on
airline), too slow to recompute 1,300 times in CI; the agreement test recomputes a seeded
sample of these with tau-bench's code and compares the harness's verdict with all of them.

    python tests/interop/make_tau_rewards.py            # every kind
    python tests/interop/make_tau_rewards.py KIND ...   # only these kinds, merged into the file
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.interop.tau_support import DOMAINS, KINDS, tau_env, tau_reward, trajectory  # noqa: E402

OUT = Path(__file__).parent / "fixtures" / "tau_bench_rewards.json"


def main(kinds: list[str]) -> None:
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise SystemExit(f"unknown kind(s) {unknown}; kinds: {', '.join(KINDS)}")
    rewards: dict[str, dict[str, list[float]]] = (
        json.loads(OUT.read_text()) if kinds and OUT.is_file() else {}
    )
    for domain in DOMAINS:
        env = tau_env(domain)
        ending = set(env.terminate_tools)
        rewards.setdefault(domain, {})
        for kind in kinds or KINDS:
            out = []
            for i, task in enumerate(env.tasks):
                actions = [a.model_dump() for a in task.actions]
                out.append(tau_reward(domain, i, trajectory(kind, actions, task.outputs, ending)))
            rewards[domain][kind] = out
            print(domain, kind, f"{sum(out):.0f}/{len(out)} rewarded", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(rewards, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
