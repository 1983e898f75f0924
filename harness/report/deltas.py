"""Arm roles and per-class paired deltas for the report data (the HTML report's forest plot).

Roles: the baseline and candidate come from the suite's ``report.primary``, else the first
two arms; the A/A arm is another arm configured exactly like the baseline (same agent, params
and model), whose difference from the baseline is noise: the floor a real delta must clear.

Per-class deltas are means of per-task rate differences over tasks both arms ran, with a
cluster-robust normal interval (``harness.stats.paired_difference``; docs/statistics.md).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from harness.report.load import ArmTrials, RunData
from harness.report.sections import task_outcomes

DELTAS_METHOD = "mean of per-task rate differences, cluster-robust normal interval"


def arm_roles(suite: dict[str, Any], arms: list[str]) -> dict[str, str | None]:
    """{"baseline", "candidate", "aa"} arm names (None where the run has no such arm)."""
    primary = (suite.get("report") or {}).get("primary") or {}
    baseline = primary.get("baseline") or (arms[0] if len(arms) >= 2 else None)
    candidate = primary.get("candidate") or next((a for a in arms if a != baseline), None)
    specs = {a.get("name"): a for a in suite.get("arms", []) if isinstance(a, dict)}

    def shape(name: str | None) -> tuple[Any, str, str]:
        s = specs.get(name) or {}
        return (s.get("agent"), repr(s.get("params")), repr(s.get("model")))

    others = [a for a in arms if a not in (baseline, candidate)]
    aa = None
    if baseline and baseline in specs:
        aa = next((a for a in others if shape(a) == shape(baseline)), None)
    if aa is None:
        aa = next((a for a in others if a.lower().endswith(("-aa", "_aa", ".aa"))), None)
    return {"baseline": baseline, "candidate": candidate if baseline else None, "aa": aa}


def arm_settings(suite: dict[str, Any], roles: dict[str, str | None]) -> dict[str, Any]:
    """Per arm as the suite declares it: role, agent, model name and params."""
    names = {v: k for k, v in roles.items() if v}
    label = {"baseline": "baseline", "candidate": "candidate", "aa": "A/A copy of baseline"}
    out: dict[str, Any] = {}
    for spec in suite.get("arms", []):
        if not isinstance(spec, dict) or not spec.get("name"):
            continue
        model = spec.get("model") or {}
        model_name = (model.get("name") or model.get("model")) if isinstance(model, dict) else model
        out[spec["name"]] = {
            "role": label.get(names.get(spec["name"], ""), ""),
            "agent": spec.get("agent", ""),
            "model": model_name or None,
            "params": spec.get("params") or None,
        }
    return out


def _task_rates(arm: ArmTrials, denominator: str) -> dict[str, tuple[float, str, str]]:
    """task id -> (rate, class, cluster) over the tasks with counted trials."""
    o = task_outcomes(arm, denominator)
    out = {}
    for i in np.flatnonzero(o.include):
        tid = str(arm.tasks[i])
        out[tid] = (
            float(o.c[i] / o.n[i]),
            str(arm.classes[i] or "") or "(none)",
            str(arm.clusters[i] or "") or tid,
        )
    return out


def class_deltas(
    data: RunData, candidate: str, baseline: str, denominator: str, confidence: float
) -> dict[str, Any] | None:
    """Paired per-class deltas (candidate − baseline) over tasks both arms ran, or None."""
    from harness.stats import paired_difference

    a, b = data.arms.get(candidate), data.arms.get(baseline)
    if a is None or b is None:
        return None
    ra, rb = _task_rates(a, denominator), _task_rates(b, denominator)
    groups: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for tid in sorted(ra.keys() & rb.keys()):
        x, cls, cluster = ra[tid]
        groups[cls].append((x, rb[tid][0], cluster))
    if not groups:
        return None

    def diff(items: list[tuple[float, float, str]]) -> dict[str, Any]:
        xs, ys, cl = zip(*items, strict=True)
        est = sum(xs) / len(xs) - sum(ys) / len(ys)
        out: dict[str, Any] = {"estimate": est, "n": len(items), "lo": None, "hi": None}
        if len(items) >= 2 and len(set(cl)) >= 2:
            d = paired_difference(list(xs), list(ys), confidence, clusters=list(cl))
            if math.isfinite(d.se):
                out["lo"], out["hi"] = float(d.ci[0]), float(d.ci[1])
        return out

    return {
        "baseline": baseline,
        "candidate": candidate,
        "overall": diff([i for g in groups.values() for i in g]),
        "by_class": [{"class": k, **diff(v)} for k, v in sorted(groups.items())],
        "method": DELTAS_METHOD,
        "confidence": confidence,
    }


def deltas_section(
    data: RunData, roles: dict[str, str | None], settings: dict[str, Any]
) -> dict[str, Any] | None:
    """Per-class deltas of the candidate, with the A/A arm's overall delta as noise floor."""
    base, cand, aa = roles.get("baseline"), roles.get("candidate"), roles.get("aa")
    if not base or not cand:
        return None
    conf, denominator = settings["confidence"], settings["denominator"]
    out = class_deltas(data, cand, base, denominator, conf)
    if out is None:
        return None
    out["noise_floor"] = None
    if aa:
        floor = class_deltas(data, aa, base, denominator, conf)
        if floor and floor["overall"].get("lo") is not None:
            out["noise_floor"] = {
                "arm": aa,
                "lo": floor["overall"]["lo"],
                "hi": floor["overall"]["hi"],
                "method": f"{aa} − {base}, same method",
            }
    return out
