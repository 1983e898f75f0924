"""The judge's verdicts and people's labels of one trial as Inspect scores.

Inspect keeps every scorer's result of a sample under its own name in ``scores``; a judged
trial's log sample gets, beside ``harness`` (the trial's verdict):

- ``<grader>/<criterion>`` per judge criterion (``judge/correct``): ``C`` or ``I`` by the
  criterion's pass rule, the judge's stated reasons as the explanation, and in metadata the
  criterion's value on its scale, the sample votes, whether they disagreed, and the judge's
  model, API, setup hash and usage (tokens and cost, the judge's own, never the agent's),
  and for a judge with workspace tools its tool calls;
- ``human/<labeller>`` per person's label of the trial (``human/<labeller>/<criterion>``
  for a label of one criterion): ``C`` or ``I``, their note as the explanation, when and
  from where in metadata, and as ``history`` the labels of theirs it replaced (oldest
  first, each with its value, note, when and when it was replaced): the export loses
  nothing the store knows. Labels sit beside the judge's verdict, never over it.
"""

from __future__ import annotations

from typing import Any

from harness.export.inspect_log import JudgeScore, LabelHistory, LabelScore
from harness.store.tables import HumanLabel, ReplacedLabel

HUMAN = "human"


def judge_scores(evidence: dict[str, Any]) -> dict[str, JudgeScore]:
    """One score per criterion of every judge verdict in a trial's grader evidence."""
    out: dict[str, JudgeScore] = {}
    for verdict in evidence.get("graders") or []:
        judge = (verdict.get("details") or {}).get("judge")
        if not judge:
            continue
        for c in judge.get("criteria") or []:
            name = _free(out, f"{verdict.get('grader') or 'judge'}/{c['id']}")
            out[name] = {
                "value": "C" if c.get("passed") else "I",
                "answer": None,
                "explanation": "; ".join(str(r) for r in c.get("reasons") or []),
                "metadata": {
                    "criterion": str(c["id"]),
                    "scale_value": c.get("value"),
                    "votes": list(c.get("votes") or []),
                    "disagreed": bool(c.get("disagreed")),
                    "model": str(judge.get("model", "")),
                    "api": str(judge.get("api", "")),
                    "setup": str(judge.get("setup", "")),
                    "samples": int(judge.get("samples", 1)),
                    "usage": judge.get("usage") or {},
                },
            }
            if judge.get("tools"):
                out[name]["metadata"]["tools"] = list(judge["tools"])
    return out


def label_scores(
    labels: list[HumanLabel], replaced: list[ReplacedLabel] | None = None
) -> dict[str, LabelScore]:
    """One score per person's label of the trial (or of one criterion), oldest first, each
    with the ``replaced`` labels of the same person and criterion as its history."""
    earlier: dict[tuple[str, str], list[LabelHistory]] = {}
    for old in replaced or []:
        earlier.setdefault((old.labeller, old.criterion), []).append(
            {
                "value": "C" if old.passed else "I",
                "explanation": old.note,
                "labelled_at": old.labelled_at.isoformat(),
                "replaced_at": old.replaced_at.isoformat(),
                "source": old.source,
            }
        )
    out: dict[str, LabelScore] = {}
    for lab in labels:
        name = f"{HUMAN}/{lab.labeller}" + (f"/{lab.criterion}" if lab.criterion else "")
        out[_free(out, name)] = {
            "value": "C" if lab.passed else "I",
            "answer": None,
            "explanation": lab.note,
            "metadata": {
                "labeller": lab.labeller,
                "criterion": lab.criterion,
                "labelled_at": lab.labelled_at.isoformat(),
                "source": lab.source,
                "history": earlier.get((lab.labeller, lab.criterion), []),
            },
        }
    return out


def _free(taken: dict[str, Any], name: str) -> str:
    """``name``, or ``name#2``... when two graders (or labellers) share it."""
    k, free = 1, name
    while free in taken or free == "harness":
        k += 1
        free = f"{name}#{k}"
    return free
