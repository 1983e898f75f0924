"""Why trials have no verdict: the top causes per arm, each with a count, one example message
and one trial id, so "46 harness errors" comes with the line that says what broke."""

from __future__ import annotations

from collections import Counter

from harness.errors import RESOLVED
from harness.report.records import ArmReport, Cause, UnresolvedCauses
from harness.store.queries import Note

TOP = 5
"""Causes listed per arm; the rest are counted as 'other causes'."""
EXAMPLE_CHARS = 240


def cause_kind(status: str, reason: str) -> str:
    """The status and the error's type: ``harness_error: ModuleNotFoundError``. Reasons are
    written as ``Type: message`` by the trial lifecycle; a free-text reason keeps its status."""
    head = reason.split(":", 1)[0].strip()
    if head and " " not in head and len(head) <= 60:
        return f"{status}: {head}"
    return status


def status_of(kind: str) -> str:
    return kind.split(": ", 1)[0]


def unresolved_rows(notes: list[Note]) -> list[tuple[str, str, str, int]]:
    """(arm, status, reason, trial id) of every trial without a verdict, oldest first."""
    return [(n.arm, n.status, n.reason, n.id) for n in notes if n.status not in RESOLVED]


def agent_failure_rows(notes: list[Note]) -> list[tuple[str, str, str, int]]:
    """(arm, "failed", "kind: reason", trial id) of every failure the agent caused (timeouts,
    malformed results, crashes, a broken sandbox), oldest first: the shape of
    ``unresolved_rows``, so both list their causes alike."""
    return [
        (n.arm, "failed", f"{n.failure_kind}: {n.reason.removeprefix('agent failure: ')}", n.id)
        for n in notes
        if n.failure_kind is not None
    ]


def unresolved_causes(rows: list[tuple[str, str, str, int]]) -> dict[str, UnresolvedCauses]:
    """Per arm: ``{"causes": [{kind, count, example, trial_id}], "other": n}`` from
    (arm, status, reason, trial id) rows of unresolved trials."""
    counts: dict[str, Counter[str]] = {}
    first: dict[tuple[str, str], tuple[str, int]] = {}
    for arm, status, reason, trial_id in rows:
        kind = cause_kind(status, reason)
        counts.setdefault(arm, Counter())[kind] += 1
        first.setdefault((arm, kind), (reason, trial_id))
    out: dict[str, UnresolvedCauses] = {}
    for arm, counter in counts.items():
        top = counter.most_common(TOP)
        causes: list[Cause] = []
        for kind, n in top:
            reason, trial_id = first[(arm, kind)]
            example = " ".join(reason.split())
            head = kind.split(": ", 1)[-1]
            if kind != status_of(kind) and example.startswith(head + ":"):
                example = example[len(head) + 1 :].strip()  # the type is in the kind already
            if len(example) > EXAMPLE_CHARS:
                example = example[: EXAMPLE_CHARS - 1] + "…"
            causes.append({"kind": kind, "count": n, "example": example, "trial_id": trial_id})
        out[arm] = {"causes": causes, "other": sum(counter.values()) - sum(n for _, n in top)}
    return out


def causes_lines(arm: ArmReport, key: str = "unresolved_causes") -> list[str]:
    """Plain lines for terminal and Markdown: '12× harness_error: X, e.g. trial 42: "msg"'.
    ``key``: ``unresolved_causes``, or ``agent_failure_causes`` (failures the agent caused:
    ``failed: timeout``, ``failed: invalid_agent_result``...)."""
    found = (
        arm.get("agent_failure_causes")
        if key == "agent_failure_causes"
        else arm.get("unresolved_causes")
    )
    section = found or UnresolvedCauses(causes=[], other=0)
    lines = [
        f'{c["count"]}× {c["kind"]}, e.g. trial {c["trial_id"]}: "{c["example"]}"'
        for c in section["causes"]
    ]
    if section["other"]:
        lines.append(f"{section['other']} more in other causes")
    return lines
