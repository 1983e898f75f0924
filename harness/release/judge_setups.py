"""Which judge setup graded each task: two sides judged differently are never paired silently.

Eval-harness guide: "a judge whose version changes between your two arms breaks pairing
outright". A task's judge setup is the hash of its ``judge`` graders' setups
(``graders.judge.JudgeParams.setup_hash``: model, URL, API, settings, prompt template,
rubric, what it reads, samples), read from the run's stored config.
"""

from __future__ import annotations

from typing import Any

from harness.release.run_config import StoredConfig

JUDGE = "judge"


def is_judge(spec: object) -> bool:
    return isinstance(spec, dict) and spec.get("type") == JUDGE


def task_setups(config: StoredConfig, tasks: set[str]) -> dict[str, tuple[str, ...]]:
    """Task id → the setup hashes of its judge graders (tasks without a judge left out)."""
    from graders.judge import JudgeParams

    out: dict[str, tuple[str, ...]] = {}
    stored: dict[str, Any] = dict(config.get("tasks") or {})
    for task in sorted(tasks):
        specs: list[Any] = list((stored.get(task) or {}).get("graders") or [])
        hashes = tuple(
            JudgeParams.model_validate(spec).setup_hash() for spec in specs if is_judge(spec)
        )
        if hashes:
            out[task] = hashes
    return out


def judge_change(
    config_a: StoredConfig, config_b: StoredConfig, tasks: set[str], labels: tuple[str, str]
) -> str | None:
    """One sentence naming how the two sides' judge setups differ, or None when they agree."""
    sa, sb = task_setups(config_a, tasks), task_setups(config_b, tasks)
    differ = sorted(t for t in set(sa) | set(sb) if sa.get(t) != sb.get(t))
    if not differ:
        return None
    first = differ[0]
    was = "/".join(h.removeprefix("sha256:") for h in sa.get(first, ())) or "no judge"
    now = "/".join(h.removeprefix("sha256:") for h in sb.get(first, ())) or "no judge"
    more = f" and {len(differ) - 1} more" if len(differ) > 1 else ""
    return (
        f"{labels[0]} and {labels[1]} were judged by different judge setups on "
        f"{len(differ)} task(s) ({first}{more}: {was} vs {now})"
    )


def without_judges(task: dict[str, Any]) -> dict[str, Any]:
    """A stored task definition with its judge graders left out (compared apart)."""
    graders = [g for g in task.get("graders") or [] if not is_judge(g)]
    return {**task, "graders": graders}
