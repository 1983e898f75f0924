"""``harness export RUN --format inspect``: a run as Inspect AI eval logs (``inspect view``).

Inspect's log (JSON, format version 2) describes one evaluation of one model on one task
set, so each arm becomes one log file: ``FILE`` for a one-arm run, ``FILE-<arm>.json`` per
arm otherwise. Each trial is a sample (id: the task id, ``#variant`` appended; epoch: trial
index + 1) with the instruction as input, its trajectory as messages (user turns, the
agent's messages, tool calls and their results), one score ``harness`` (``C`` passed, ``I``
failed, absent when unresolved) whose explanation is the verdict's reasons and whose
metadata holds each grader's evidence, token usage and cost, and timings. The harness's own
fields (status, cluster, seed, image id) are in the sample's metadata. Written as plain JSON
from the published schema; no Inspect code is imported.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from harness.errors import ConfigError
from harness.store import Store
from harness.store.tables import Run, TrajectoryEvent, Trial, table_of

STATUS = {
    "finished": "success",
    "running": "started",
    "interrupted": "cancelled",
    "failed": "error",
}


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.isoformat()
    return str(value)


def _messages(events: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if instruction:
        out.append({"role": "user", "content": instruction, "source": "input"})
    for e in events:
        kind = e["kind"]
        if kind == "user":
            out.append({"role": "user", "content": e["content"] or ""})
        elif kind == "message":
            out.append({"role": "assistant", "content": e["content"] or "", "source": "generate"})
        elif kind in ("tool_call", "command"):
            call_id = f"call_{e['step']}"
            out.append(
                {
                    "role": "assistant",
                    "content": "",
                    "source": "generate",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "function": e["tool"] or "tool",
                            "arguments": e["args"] or {},
                            "type": "function",
                        }
                    ],
                }
            )
            tool: dict[str, Any] = {
                "role": "tool",
                "content": e["content"] or "",
                "tool_call_id": call_id,
                "function": e["tool"] or "tool",
            }
            if not e["ok"]:
                tool["error"] = {"type": "unknown", "message": (e["content"] or "")[:500]}
            out.append(tool)
    return out


def _usage(row: dict[str, Any]) -> dict[str, Any] | None:
    """Inspect's usage record of one trial; None when the trial's tokens are unknown (the
    model endpoint reported no usage): left out, never exported as 0."""
    if row["tokens_in"] is None or row["tokens_out"] is None:
        return None
    return {
        "input_tokens": row["tokens_in"],
        "output_tokens": row["tokens_out"],
        "total_tokens": row["tokens_in"] + row["tokens_out"],
        "input_tokens_cache_read": row["tokens_cached"],
        "total_cost": row["cost_usd"],
    }


def _log(run: dict[str, Any], arm: dict[str, Any], trials: list[dict], events: dict) -> dict:
    """Long because it maps one arm's trials to Inspect's log schema field by field.

    One Inspect eval log (a dict) for one arm of the run."""
    tasks = (run["config"] or {}).get("tasks", {})
    model = (arm.get("model") or {}).get("name") or f"harness/{arm.get('agent', arm['name'])}"
    samples, usage_total = [], {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    cost, cost_known = 0.0, True
    resolved = [t for t in trials if t["passed"] is not None]
    for t in trials:
        sid = t["task_id"] + (f"#{t['variant']}" if t["variant"] else "")
        instruction = str(tasks.get(t["task_id"], {}).get("instruction", ""))
        usage = _usage(t)
        for k in usage_total:
            usage_total[k] += usage[k] if usage is not None else 0
        if t["cost_usd"] is None:
            cost_known = False
        else:
            cost += t["cost_usd"]
        sample: dict[str, Any] = {
            "id": sid,
            "epoch": t["trial_index"] + 1,
            "input": instruction,
            "target": "",
            "messages": _messages(events.get(t["id"], []), instruction),
            "output": {"model": model, "choices": []},
            "metadata": {
                k: t[k]
                for k in (
                    "status",
                    "cluster",
                    "task_class",
                    "seed",
                    "image_id",
                    "attempts",
                    "steps",
                )
            },
            "model_usage": {model: usage} if usage is not None else {},
            "started_at": _iso(t["started_at"]),
            "completed_at": _iso(t["finished_at"]),
            "total_time": t["latency_s"],
        }
        if t["passed"] is not None:
            sample["scores"] = {
                "harness": {
                    "value": "C" if t["passed"] else "I",
                    "answer": t["answer"],
                    "explanation": t["reason"] or "",
                    "metadata": {"score": t["score"], "graders": t["evidence"].get("graders", [])},
                }
            }
        if t["status"] not in ("passed", "failed"):
            sample["error"] = {
                "message": t["reason"] or t["status"],
                "traceback": t["error"] or "",
                "traceback_ansi": t["error"] or "",
            }
        samples.append(sample)
    n = len(resolved)
    rate = sum(bool(t["passed"]) for t in resolved) / n if n else 0.0
    stderr = math.sqrt(rate * (1 - rate) / (n - 1)) if n > 1 else 0.0
    return {
        "version": 2,
        "status": STATUS.get(run["status"], "started"),
        "eval": {
            "eval_id": f"{run['id']}-{arm['name']}",
            "run_id": run["id"],
            "created": _iso(run["started_at"]),
            "task": run["suite_name"],
            "task_id": run["suite_name"],
            "task_version": 0,
            "dataset": {
                "name": run["suite_name"],
                "samples": len({t["task_id"] for t in trials}),
                "sample_ids": sorted({t["task_id"] for t in trials}),
            },
            "model": model,
            "config": {"epochs": run["trials_per_task"]},
            "metadata": {"harness_arm": arm["name"], "config_hash": run["config_hash"]},
        },
        "plan": {
            "name": "harness",
            "steps": [{"solver": arm.get("agent", ""), "params": arm.get("params", {})}],
        },
        "results": {
            "total_samples": len(trials),
            "completed_samples": n,
            "scores": [
                {
                    "name": "harness",
                    "scorer": "harness",
                    "params": {},
                    "metrics": {
                        "accuracy": {"name": "accuracy", "value": rate, "params": {}},
                        "stderr": {"name": "stderr", "value": stderr, "params": {}},
                    },
                }
            ],
        },
        "stats": {
            "started_at": _iso(run["started_at"]),
            "completed_at": _iso(run["finished_at"]),
            "model_usage": {model: {**usage_total, "total_cost": cost if cost_known else None}},
        },
        "samples": samples,
    }


def write_inspect(store: Store, run_id: str, output: Path) -> int:
    """Write one Inspect eval log per arm; returns the number of trials written. The
    accuracy's stderr is the plain binomial one over trials (Inspect's own metric), not the
    harness's clustered interval: use `harness report` for that."""
    run_t, trial_t, ev_t = table_of(Run), table_of(Trial), table_of(TrajectoryEvent)
    with store.engine.connect() as conn:
        found = conn.execute(select(run_t).where(run_t.c.id == run_id)).mappings().first()
        if found is None:
            raise ConfigError("RUN", "run_id", f"no run '{run_id}' in the store")
        run = dict(found)
        trials = [
            dict(r)
            for r in conn.execute(
                select(trial_t).where(trial_t.c.run_id == run_id).order_by(trial_t.c.id)
            ).mappings()
        ]
        events: dict[int, list[dict[str, Any]]] = {}
        ids = select(trial_t.c.id).where(trial_t.c.run_id == run_id)
        for e in conn.execute(
            select(ev_t).where(ev_t.c.trial_id.in_(ids)).order_by(ev_t.c.trial_id, ev_t.c.step)
        ).mappings():
            events.setdefault(e["trial_id"], []).append(dict(e))
    arms = {a["name"]: a for a in (run["config"] or {}).get("suite", {}).get("arms", [])}
    names = list(dict.fromkeys(t["arm"] for t in trials)) or list(arms)
    for name in names:
        arm = arms.get(name, {"name": name})
        log = _log(run, arm, [t for t in trials if t["arm"] == name], events)
        path = output if len(names) == 1 else output.with_name(f"{output.stem}-{name}.json")
        path.write_text(json.dumps(log, indent=1, default=str))
    return len(trials)
