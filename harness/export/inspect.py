"""``harness export RUN --format inspect -o DIR``: a run as Inspect AI eval logs.

Inspect's log (JSON, format version 2) describes one evaluation of one model on one task
set, so each arm becomes one log file in the log directory ``DIR``, named as Inspect names
its own (``<created>_<task>_<id>.json``: the run's start time, the suite name, an id derived
from the run and the arm), so ``inspect view --log-dir DIR`` and Inspect's
``list_eval_logs(DIR)`` list them; exporting the same run again rewrites the same files.
``RUN:ARM`` exports one arm. Each trial is a sample (id: the task id, ``#variant`` appended; epoch: trial
index + 1) with the instruction as input, its trajectory as messages (user turns, the
agent's messages, tool calls and their results), one score ``harness`` (``C`` passed, ``I``
failed, absent when unresolved) whose explanation is the verdict's reasons and whose
metadata holds each grader's evidence, token usage and cost, and timings. A judged trial
adds one score per judge criterion and one per person's label (``inspect_scores``). The
harness's own fields (status, cluster, seed, image id; the judge's calls and cost) are in
the sample's metadata. Written as plain JSON
from the published schema; no Inspect code is imported.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import Session, col, select

from harness.errors import ConfigError
from harness.export.inspect_log import (
    AssistantMessage,
    EvalLog,
    Message,
    ModelUsage,
    Sample,
    ToolMessage,
    UserMessage,
)
from harness.export.inspect_scores import judge_scores, label_scores
from harness.release.run_config import StoredArm
from harness.release.source import stored_config, suite_config
from harness.store import Store
from harness.store.labels import run_labels, run_replaced_labels
from harness.store.tables import HumanLabel, ReplacedLabel, Run, TrajectoryEvent, Trial

STATUS = {
    "finished": "success",
    "running": "started",
    "interrupted": "cancelled",
    "failed": "error",
}


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat()


@dataclass(frozen=True)
class _Arm:
    """What the log names of an arm, read from the suite stored with the run."""

    name: str
    agent: str
    """'' when the stored suite does not name the arm."""
    model: str
    """The endpoint's model name, else ``harness/<agent>`` (Inspect wants some model)."""
    params: object


def _arm(name: str, stored: StoredArm | None) -> _Arm:
    """The arm ``name`` from its stored (JSON) form; tolerant of runs written by older
    versions, whose stored suite may lack a field."""
    fields: StoredArm = stored or {}
    agent = fields.get("agent")
    model = fields.get("model")
    model_name = model.get("name") if isinstance(model, dict) else None
    return _Arm(
        name=name,
        agent=str(agent) if agent is not None else "",
        model=str(model_name) if model_name else f"harness/{agent if agent is not None else name}",
        params=fields.get("params", {}),
    )


def _messages(events: list[TrajectoryEvent], instruction: str) -> list[Message]:
    out: list[Message] = []
    if instruction:
        out.append(UserMessage(role="user", content=instruction, source="input"))
    for e in events:
        if e.kind == "user":
            out.append(UserMessage(role="user", content=e.content or ""))
        elif e.kind == "message":
            out.append(
                AssistantMessage(role="assistant", content=e.content or "", source="generate")
            )
        elif e.kind in ("tool_call", "command"):
            call_id = f"call_{e.step}"
            out.append(
                AssistantMessage(
                    role="assistant",
                    content="",
                    source="generate",
                    tool_calls=[
                        {
                            "id": call_id,
                            "function": e.tool or "tool",
                            "arguments": e.args or {},
                            "type": "function",
                        }
                    ],
                )
            )
            tool = ToolMessage(
                role="tool",
                content=e.content or "",
                tool_call_id=call_id,
                function=e.tool or "tool",
            )
            if not e.ok:
                tool["error"] = {"type": "unknown", "message": (e.content or "")[:500]}
            out.append(tool)
    return out


def _usage(t: Trial) -> ModelUsage | None:
    """Inspect's usage record of one trial; None when the trial's tokens are unknown (the
    model endpoint reported no usage): left out, never exported as 0."""
    if t.tokens_in is None or t.tokens_out is None:
        return None
    return {
        "input_tokens": t.tokens_in,
        "output_tokens": t.tokens_out,
        "total_tokens": t.tokens_in + t.tokens_out,
        "input_tokens_cache_read": t.tokens_cached,
        "total_cost": t.cost_usd,
    }


@dataclass
class _Labels:
    """One trial's labels: those in force, and the earlier ones they replaced (history)."""

    in_force: list[HumanLabel] = field(default_factory=list)
    replaced: list[ReplacedLabel] = field(default_factory=list)


def _sample(
    t: Trial,
    instruction: str,
    model: str,
    events: list[TrajectoryEvent],
    labels: _Labels,
) -> Sample:
    """One trial as an Inspect sample."""
    usage = _usage(t)
    sample: Sample = {
        "id": t.task_id + (f"#{t.variant}" if t.variant else ""),
        "epoch": t.trial_index + 1,
        "input": instruction,
        "target": "",
        "messages": _messages(events, instruction),
        "output": {"model": model, "choices": []},
        "metadata": {
            "status": t.status,
            "cluster": t.cluster,
            "task_class": t.task_class,
            "seed": t.seed,
            "image_id": t.image_id,
            "attempts": t.attempts,
            "steps": t.steps,
        },
        "model_usage": {model: usage} if usage is not None else {},
        "started_at": _iso(t.started_at),
        "completed_at": _iso(t.finished_at),
        "total_time": t.latency_s,
    }
    if t.passed is not None:
        sample["scores"] = {
            "harness": {
                "value": "C" if t.passed else "I",
                "answer": t.answer,
                "explanation": t.reason or "",
                "metadata": {"score": t.score, "graders": t.evidence.get("graders", [])},
            }
        }
    judged = judge_scores(t.evidence or {})
    if judged or labels.in_force:
        people = label_scores(labels.in_force, labels.replaced)
        sample["scores"] = {**sample.get("scores", {}), **judged, **people}
    if judged:
        sample["metadata"]["judge_calls"] = int(t.judge_calls or 0)
        sample["metadata"]["judge_cost_usd"] = t.judge_cost_usd
    if t.status not in ("passed", "failed"):
        sample["error"] = {
            "message": t.reason or t.status,
            "traceback": t.error or "",
            "traceback_ansi": t.error or "",
        }
    return sample


# long: it maps one arm's run-level fields to Inspect's log schema field by field.
def _log(
    run: Run,
    arm: _Arm,
    trials: list[Trial],
    events: dict[int, list[TrajectoryEvent]],
    labels: dict[int, _Labels],
) -> EvalLog:
    """One Inspect eval log for one arm of the run."""
    tasks = stored_config(run).get("tasks", {})
    samples: list[Sample] = []
    tokens_in = tokens_out = 0
    cost, cost_known = 0.0, True
    resolved = [t for t in trials if t.passed is not None]
    for t in trials:
        instruction = str(tasks.get(t.task_id, {}).get("instruction", ""))
        sample = _sample(
            t, instruction, arm.model, events.get(t.id or 0, []), labels.get(t.id or 0, _Labels())
        )
        usage = sample["model_usage"].get(arm.model)
        if usage is not None:
            tokens_in += usage["input_tokens"]
            tokens_out += usage["output_tokens"]
        if t.cost_usd is None:
            cost_known = False
        else:
            cost += t.cost_usd
        samples.append(sample)
    n = len(resolved)
    rate = sum(bool(t.passed) for t in resolved) / n if n else 0.0
    stderr = math.sqrt(rate * (1 - rate) / (n - 1)) if n > 1 else 0.0
    return {
        "version": 2,
        "status": STATUS.get(run.status, "started"),
        "eval": {
            "eval_id": f"{run.id}-{arm.name}",
            "run_id": run.id,
            "created": _iso(run.started_at),
            "task": run.suite_name,
            "task_id": log_id(run.id, arm.name),
            "task_version": 0,
            "dataset": {
                "name": run.suite_name,
                "samples": len({t.task_id for t in trials}),
                "sample_ids": sorted({t.task_id for t in trials}),
            },
            "model": arm.model,
            "config": {"epochs": run.trials_per_task},
            "metadata": {"harness_arm": arm.name, "config_hash": run.config_hash},
        },
        "plan": {"name": "harness", "steps": [{"solver": arm.agent, "params": arm.params}]},
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
            "started_at": _iso(run.started_at),
            "completed_at": _iso(run.finished_at),
            "model_usage": {
                arm.model: {
                    "input_tokens": tokens_in,
                    "output_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                    "total_cost": cost if cost_known else None,
                }
            },
        },
        "samples": samples,
    }


def log_id(run_id: str, arm: str) -> str:
    """The log's id: stable for (run, arm), with no '-' or '_' (Inspect splits file names
    on them to read the task and the id back)."""
    return hashlib.sha256(f"{run_id}\0{arm}".encode()).hexdigest()[:22]


def _name_part(text: str) -> str:
    """A file-name component as Inspect cleans its own ('_', '/', ':', '+' become '-')."""
    return re.sub(r"[_/:+]", "-", text)


def log_file_name(run: Run, arm: str) -> str:
    """``<created>_<task>_<id>.json``, the name Inspect gives a log of this eval."""
    created = _iso(run.started_at.replace(microsecond=0)) or ""
    return f"{_name_part(created)}_{_name_part(run.suite_name)}_{log_id(run.id, arm)}.json"


@dataclass(frozen=True)
class Written:
    """One log file written: where, for which arm, how many trials."""

    path: Path
    arm: str
    trials: int


def write_inspect(
    store: Store, run_id: str, log_dir: Path, arms: list[str] | None = None
) -> list[Written]:
    """Write one Inspect eval log per arm (only ``arms`` when given) into ``log_dir``
    (created if missing). The accuracy's stderr is the plain binomial one over trials
    (Inspect's own metric), not the harness's clustered interval: use `harness report`."""
    with Session(store.engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise ConfigError("RUN", "run_id", f"no run '{run_id}' in the store")
        trials = list(s.exec(select(Trial).where(Trial.run_id == run_id).order_by(col(Trial.id))))
        events: dict[int, list[TrajectoryEvent]] = {}
        ids = select(Trial.id).where(Trial.run_id == run_id)
        for e in s.exec(
            select(TrajectoryEvent)
            .where(col(TrajectoryEvent.trial_id).in_(ids))
            .order_by(col(TrajectoryEvent.trial_id), col(TrajectoryEvent.step))
        ):
            events.setdefault(e.trial_id, []).append(e)
    labels: dict[int, _Labels] = {}
    for lab in run_labels(store.engine, run_id):
        labels.setdefault(lab.trial_id, _Labels()).in_force.append(lab)
    for old in run_replaced_labels(store.engine, run_id):
        labels.setdefault(old.trial_id, _Labels()).replaced.append(old)
    stored = {a["name"]: a for a in suite_config(run).get("arms", [])}
    names = list(dict.fromkeys([*(run.arms or stored), *(t.arm for t in trials)]))
    log_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in arms or names:
        mine = [t for t in trials if t.arm == name]
        log = _log(run, _arm(name, stored.get(name)), mine, events, labels)
        path = log_dir / log_file_name(run, name)
        path.write_text(json.dumps(log, indent=1, default=str))
        written.append(Written(path, name, len(mine)))
    return written
