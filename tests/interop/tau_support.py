"""Shared by the tau-bench agreement test and its fixture script: where the pinned checkout
is, the trajectories we construct per task, and tau-bench's own reward for one of them.

A trajectory is a list of steps ``{"name": tool, "kwargs": {...}}`` where the tool
``respond`` is a message to the user (tau-bench's ``RESPOND_ACTION_NAME``) and
``final_answer`` the agent's final answer, returned but never said to the user: tau-bench's
trajectory has no such thing, so its reward never sees it (``tau_reward`` skips it).
"""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
THIRD_PARTY = Path(os.environ.get("HARNESS_THIRD_PARTY", REPO.parent / "shared" / "third_party"))
CHECKOUT = THIRD_PARTY / "tau-bench"
DOMAINS = ("retail", "airline")
RESPOND = "respond"
FINAL_ANSWER = "final_answer"
READ_ONLY = ("get_", "find_", "list_", "search_", "calculate", "think", "transfer_")

KINDS = (
    "noop",  # nothing done, nothing said
    "oracle",  # gold actions, outputs said
    "skip_last_write",  # the last state-changing gold action left out
    "wrong_value",  # an argument of the last state-changing action altered
    "float_args",  # every integer argument sent as a float (2 -> 2.0): a type-only change
    "no_outputs",  # gold actions, but the required outputs never said
    "outputs_with_commas",  # outputs said in upper case with thousands separators
    "act_after_transfer",  # gold, a hand-over, then a state change after it
    "outputs_in_answer_only",  # gold actions; the outputs only in the final answer, never said
)


def checkout_or_skip() -> Path:
    if (CHECKOUT / "tau_bench").is_dir():
        return CHECKOUT
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the pinned tau-bench copy is missing at {CHECKOUT}")
    pytest.skip(f"the pinned tau-bench copy is not at {CHECKOUT}")


def _is_write(name: str) -> bool:
    return not name.startswith(READ_ONLY) and name not in (RESPOND, FINAL_ANSWER)


def _alter(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "0"
    if isinstance(value, list):
        return value[:-1] if value else ["0"]
    return "altered"


def _floats(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value


def _commas(text: str) -> str:
    """'1093.34' -> '1,093.34', upper-cased: tau-bench removes commas and folds case."""
    import re

    return re.sub(r"\d{4,}", lambda m: f"{int(m.group(0)):,}", text).upper()


def trajectory(kind: str, actions: list[dict], outputs: list[str], ending: set[str]) -> list[dict]:
    """The steps of one constructed trajectory for a task with gold ``actions``."""
    acts = [{"name": a["name"], "kwargs": copy.deepcopy(a["kwargs"])} for a in actions]
    say = [{"name": RESPOND, "kwargs": {"content": "Here you go: " + "; ".join(outputs)}}]
    writes = [i for i, a in enumerate(acts) if _is_write(a["name"]) and a["name"] not in ending]
    if kind == "noop":
        return []
    if kind == "oracle":
        return _say_before_end(acts, say, ending)
    if kind == "skip_last_write":
        if writes:
            del acts[writes[-1]]
        return _say_before_end(acts, say, ending)
    if kind == "wrong_value":
        if writes:
            kwargs = acts[writes[-1]]["kwargs"]
            key = sorted(kwargs)[-1]
            kwargs[key] = _alter(kwargs[key])
        return _say_before_end(acts, say, ending)
    if kind == "float_args":
        acts = [{"name": a["name"], "kwargs": _floats(a["kwargs"])} for a in acts]
        return _say_before_end(acts, say, ending)
    if kind == "no_outputs":
        return [*acts, {"name": RESPOND, "kwargs": {"content": "All done."}}]
    if kind == "outputs_with_commas":
        said = [{"name": RESPOND, "kwargs": {"content": _commas(say[0]["kwargs"]["content"])}}]
        return _say_before_end(acts, said, ending)
    if kind == "outputs_in_answer_only":
        answer = {"name": FINAL_ANSWER, "kwargs": {"content": say[0]["kwargs"]["content"]}}
        return [
            *_say_before_end(acts, [{"name": RESPOND, "kwargs": {"content": "All done."}}], ending),
            answer,
        ]
    if kind == "act_after_transfer":
        kept = [a for a in acts if a["name"] not in ending]
        late = [acts[i] for i in writes[-1:]]
        early = [a for a in kept if a not in late]
        hand_over = {"name": sorted(ending)[0], "kwargs": {"summary": "the customer's request"}}
        return [*early, *say, hand_over, *late]
    raise ValueError(kind)


def _say_before_end(acts: list[dict], say: list[dict], ending: set[str]) -> list[dict]:
    cut = next((i for i, a in enumerate(acts) if a["name"] in ending), len(acts))
    return [*acts[:cut], *say, *acts[cut:]]


# ----------------------------------------------------------------------------- tau-bench
class _QuietUser:
    """Stands in for tau-bench's user simulator: the reward never asks it anything."""

    def step(self, content: str) -> str:
        return "ok"

    def reset(self, instruction: str | None = None) -> str:
        return ""

    def get_total_cost(self) -> float:
        return 0.0


@cache
def tau_env(domain: str, split: str = "test"):
    """tau-bench's own environment class for a domain, from the pinned checkout. Its LLM
    user module imports litellm at the top; the reward never calls it, so a stand-in
    module takes its place."""
    root = str(checkout_or_skip())
    if root not in sys.path:
        sys.path.insert(0, root)
    if "litellm" not in sys.modules:  # never the real one: it fetches a price list at import
        stub = types.ModuleType("litellm")
        stub.completion = None  # type: ignore[attr-defined]
        sys.modules["litellm"] = stub
    from tau_bench.envs import get_env

    env = get_env(domain, "human", None, split, task_index=0)
    env.user = _QuietUser()
    blob = pickle.dumps(env.data_load_func())
    env.data_load_func = lambda: pickle.loads(blob)  # the same data, without the disk
    env.get_data_hash = _memoized(env)
    return env


def _memoized(env):
    """tau-bench's own ``get_data_hash``, memoized on the exact data (its pickle: equal
    bytes mean the same values of the same types in the same order, so the same hash). The
    hash walks the whole database in Python; the gold state of a task recurs across
    trajectory kinds and most final states equal it."""
    original = env.get_data_hash
    memo: dict[bytes, str] = {}

    def get_data_hash() -> str:
        key = hashlib.sha256(pickle.dumps(env.data)).digest()
        if key not in memo:
            memo[key] = original()
        return memo[key]

    return get_data_hash


def tau_reward(domain: str, index: int, steps: list[dict]) -> float:
    """tau-bench's reward for ``steps`` on task ``index``: its ``Env.step`` for every step
    (so a terminating tool ends the episode there and computes the reward), else its
    ``calculate_reward`` once the steps run out."""
    from tau_bench.types import Action

    env = tau_env(domain)
    env.task_index, env.task = index, env.tasks[index]
    env.data, env.actions = env.data_load_func(), []
    for step in steps:
        if step["name"] == FINAL_ANSWER:  # never said: not part of tau-bench's trajectory
            continue
        response = env.step(Action(name=step["name"], kwargs=copy.deepcopy(step["kwargs"])))
        if response.done:
            return float(response.reward)
    return float(env.calculate_reward().reward)
