"""Arm roles and per-class paired deltas for the report data (the HTML report's forest plot).

Roles: the baseline and candidate come from the suite's ``report.primary``, else the first
two arms; the A/A arm is another arm configured exactly like the baseline (same agent, params
and model), whose difference from the baseline is noise: the floor a real delta must clear.

Per-class deltas are weighted means of per-task rate differences over tasks both arms ran,
with the interval every view uses (``harness.stats.mean_estimate``: CR2 + t over clusters),
so the forest plot's overall delta is the primary comparison's own interval.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from harness.release.floor import CRN, DEGENERATE, uses_common_random_numbers
from harness.release.run_config import StoredArm, StoredSuite
from harness.release.slices import CLASS_MIN_CLUSTERS, class_refusal
from harness.report.load import ArmTrials, RunData
from harness.report.records import ArmSetting, ClassDeltas, NoiseFloor, PairedDelta, ReportSettings
from harness.report.sections import task_outcomes

DELTAS_METHOD = "weighted mean of per-task rate differences; the shared interval method"


def arm_roles(suite: StoredSuite, arms: list[str]) -> dict[str, str | None]:
    """{"baseline", "candidate", "aa"} arm names (None where the run has no such arm)."""
    report = suite.get("report")
    primary = report.get("primary") if report else None
    baseline = (primary.get("baseline") if primary else None) or (
        arms[0] if len(arms) >= 2 else None
    )
    candidate = (primary.get("candidate") if primary else None) or next(
        (a for a in arms if a != baseline), None
    )
    specs = {a.get("name"): a for a in suite.get("arms", []) if isinstance(a, dict)}

    def shape(name: str | None) -> tuple[str | None, str, str]:
        s: StoredArm = specs.get(name) or {}
        return (s.get("agent"), repr(s.get("params")), repr(s.get("model")))

    others = [a for a in arms if a not in (baseline, candidate)]
    aa = None
    if baseline and baseline in specs:
        aa = next((a for a in others if shape(a) == shape(baseline)), None)
    if aa is None:
        aa = next((a for a in others if a.lower().endswith(("-aa", "_aa", ".aa"))), None)
    return {"baseline": baseline, "candidate": candidate if baseline else None, "aa": aa}


def arm_settings(suite: StoredSuite, roles: dict[str, str | None]) -> dict[str, ArmSetting]:
    """Per arm as the suite declares it: role, agent, model name and params."""
    names = {v: k for k, v in roles.items() if v}
    label = {"baseline": "baseline", "candidate": "candidate", "aa": "A/A copy of baseline"}
    out: dict[str, ArmSetting] = {}
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


def _task_rates(
    arm: ArmTrials, denominator: str, cluster_key: str = "cluster"
) -> dict[str, tuple[float, str, str, float]]:
    """task id -> (rate, class, cluster, weight) over the tasks with counted trials."""
    o = task_outcomes(arm, denominator)
    out = {}
    for i in np.flatnonzero(o.include):
        tid = str(arm.tasks[i])
        cluster = tid if cluster_key == "task" else (str(arm.clusters[i] or "") or tid)
        out[tid] = (
            float(o.c[i] / o.n[i]),
            str(arm.classes[i] or "") or "(none)",
            cluster,
            float(arm.weights[i]) if arm.weights[i] is not None else 1.0,
        )
    return out


def class_deltas(
    data: RunData,
    candidate: str,
    baseline: str,
    denominator: str,
    confidence: float,
    cluster_key: str = "cluster",
) -> ClassDeltas | None:
    """Paired per-class deltas (candidate − baseline) over tasks both arms ran, or None."""
    from harness.stats import mean_estimate

    a, b = data.arms.get(candidate), data.arms.get(baseline)
    if a is None or b is None:
        return None
    ra = _task_rates(a, denominator, cluster_key)
    rb = _task_rates(b, denominator, cluster_key)
    groups: dict[str, list[tuple[float, float, str, float]]] = defaultdict(list)
    for tid in sorted(ra.keys() & rb.keys()):
        x, cls, cluster, weight = rb[tid][0], ra[tid][1], rb[tid][2], rb[tid][3]
        groups[cls].append((ra[tid][0], x, cluster, weight))
    if not groups:
        return None

    every = [i for g in groups.values() for i in g]
    clustered = len({i[2] for i in every}) < len(every)

    def diff(items: list[tuple[float, float, str, float]], slice_: bool) -> PairedDelta:
        cand, base, cl, w = (np.array(v) for v in zip(*items, strict=True))
        e = mean_estimate(cand - base, cl, weights=w, kind="difference", confidence=confidence)
        out: PairedDelta = {
            "estimate": e.estimate,
            "lo": e.lo,
            "hi": e.hi,
            "n": e.n,
            "unit": "task",
            "n_clusters": len(set(cl.tolist())),
            "method": e.method,
            "improved": int(np.count_nonzero(cand > base)),
            "worse": int(np.count_nonzero(cand < base)),
        }
        if e.warning:
            out["warning"] = e.warning
        if slice_ and clustered and out["n_clusters"] < CLASS_MIN_CLUSTERS:
            out.update({"lo": None, "hi": None, "warning": class_refusal(out["n_clusters"])})
        return out

    return {
        "baseline": baseline,
        "candidate": candidate,
        "overall": diff(every, False),
        "by_class": [{"class": k, **diff(v, True)} for k, v in sorted(groups.items())],
        "method": DELTAS_METHOD,
        "confidence": confidence,
    }


def deltas_section(
    data: RunData,
    roles: dict[str, str | None],
    settings: ReportSettings,
    suite: StoredSuite | None = None,
) -> ClassDeltas | None:
    """Per-class deltas of the candidate, with the A/A arm's overall delta as noise floor."""
    base, cand, aa = roles.get("baseline"), roles.get("candidate"), roles.get("aa")
    if not base or not cand:
        return None
    conf, denominator = settings["confidence"], settings["denominator"]
    key = settings.get("cluster_key", "cluster")
    out = class_deltas(data, cand, base, denominator, conf, key)
    if out is None:
        return None
    out["noise_floor"] = None
    if aa:
        floor = class_deltas(data, aa, base, denominator, conf, key)
        if floor:
            o = floor["overall"]
            exact_zero = o["improved"] == 0 and o["worse"] == 0
            crn = uses_common_random_numbers({"suite": suite or {}}, aa)
            floor_record: NoiseFloor = {
                "arm": aa,
                "estimate": o["estimate"],
                "lo": o["lo"],
                "hi": o["hi"],
                "n": o["n"],
                "unit": "task",
                "method": f"{aa} − {base}, same method",
                "degenerate": exact_zero or crn,
                "degenerate_reason": CRN if crn else DEGENERATE if exact_zero else None,
            }
            out["noise_floor"] = floor_record
    return out
