"""Arm settings and per-class paired deltas for the report data (the HTML report's forest plot).

Roles come from the one rule (``harness.analysis.run_roles``). The per-class deltas are the
class screens of the primary comparison (``harness.analysis.paired``), and the overall delta
is that comparison itself, so the forest plot, ``harness compare`` and ``harness gate`` show
the same numbers; the A/A arm's comparison is the noise floor.
"""

from __future__ import annotations

from harness.analysis.load import RunTable
from harness.analysis.paired import aa_floor, screens
from harness.analysis.settings import Settings
from harness.config.roles import Roles
from harness.release.records import ClassScreen, Comparison
from harness.release.run_config import StoredSuite
from harness.report.records import ArmSetting, ClassDelta, ClassDeltas, PairedDelta

DELTAS_METHOD = "weighted mean of per-task rate differences; the shared interval method"


def roles_record(roles: Roles) -> dict[str, str | None]:
    """The report's ``roles``: {"baseline", "candidate", "aa"} (None where absent)."""
    return {"baseline": roles.baseline, "candidate": roles.candidate, "aa": roles.aa}


def arm_settings(suite: StoredSuite, roles: Roles) -> dict[str, ArmSetting]:
    """Per arm as the suite declares it: role, agent, model name and params."""
    label = {
        roles.baseline: "baseline",
        roles.candidate: "candidate",
        roles.aa: "A/A copy of baseline",
    }
    out: dict[str, ArmSetting] = {}
    for spec in suite.get("arms", []):
        if not isinstance(spec, dict) or not spec.get("name"):
            continue
        model = spec.get("model") or {}
        model_name = (model.get("name") or model.get("model")) if isinstance(model, dict) else model
        out[spec["name"]] = {
            "role": label.get(spec["name"], ""),
            "agent": spec.get("agent", ""),
            "model": model_name or None,
            "params": spec.get("params") or None,
        }
    return out


def _delta(c: Comparison | ClassScreen) -> PairedDelta:
    signs = c.get("signs") or {}
    out: PairedDelta = {
        "estimate": c.get("estimate"),
        "lo": c.get("lo"),
        "hi": c.get("hi"),
        "n": c.get("n", 0),
        "unit": c.get("unit", "task"),
        "n_clusters": c.get("n_clusters", 0),
        "method": c.get("method"),
        "improved": signs.get("improved", 0),
        "worse": signs.get("worse", 0),
    }
    warning = c.get("warning") or c.get("interval_warning")
    if isinstance(warning, str) and warning:
        out["warning"] = warning
    return out


def deltas_section(
    data: RunTable,
    roles: Roles,
    settings: Settings,
    comparison: Comparison | None,
    suite: StoredSuite | None = None,
) -> ClassDeltas | None:
    """The primary comparison per task class, with the A/A arm's comparison as noise floor."""
    base, cand = roles.baseline, roles.candidate
    if not base or not cand or comparison is None or comparison.get("estimate") is None:
        return None
    trials_b, trials_c = data.trials.of_arm(base), data.trials.of_arm(cand)
    by_class: list[ClassDelta] = [
        {"class": s["class"], **_delta(s)}
        for s in screens(trials_b, trials_c, comparison, settings)["classes"]
    ]
    floor = None
    if roles.aa:
        trials_aa = data.trials.of_arm(roles.aa)
        floor = aa_floor(trials_b, trials_aa, roles.aa, settings, {"suite": suite or {}})
    return {
        "baseline": base,
        "candidate": cand,
        "overall": _delta(comparison),
        "by_class": by_class,
        "method": DELTAS_METHOD,
        "confidence": settings.confidence,
        "noise_floor": floor,
    }
