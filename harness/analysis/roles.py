"""Arm roles of a stored run: ``harness.config.roles.decide_roles`` over the run's JSON config."""

from __future__ import annotations

from harness.config.roles import Roles, decide_roles
from harness.release.run_config import StoredArm, StoredSuite


def _pair(section: object) -> tuple[str, str] | None:
    primary = section.get("primary") if isinstance(section, dict) else None
    if not primary:
        return None
    return str(primary["baseline"]), str(primary["candidate"])


def run_roles(
    suite: StoredSuite, arms: list[str], gate_primary: tuple[str, str] | None = None
) -> Roles:
    """The roles of a run's ``arms`` as its stored ``suite`` declares them. ``gate_primary``:
    the pair of a gate policy applied from elsewhere (``harness gate --policy``), which
    takes the place of the suite's ``gate.primary``."""
    specs = {a.get("name"): a for a in suite.get("arms", []) if isinstance(a, dict)}

    def shape(name: str) -> tuple[object, str, str]:
        s: StoredArm = specs.get(name) or {}
        return (s.get("agent"), repr(s.get("params")), repr(s.get("model")))

    def same_setup(arm: str, baseline: str) -> bool:
        known = arm in specs and baseline in specs and specs[baseline].get("agent") is not None
        return known and shape(arm) == shape(baseline)

    return decide_roles(
        arms,
        gate=gate_primary or _pair(suite.get("gate")),
        report=_pair(suite.get("report")),
        same_setup=same_setup,
    )


def aa_copy(suite: StoredSuite, arms: list[str], arm: str) -> str | None:
    """The A/A copy of ``arm`` in the run (by the same rule as ``run_roles``), if any: the
    noise floor of any comparison whose baseline side is ``arm``."""
    roles = run_roles(suite, arms)
    if roles.baseline == arm:
        return roles.aa
    others = [a for a in arms if a != arm]
    return run_roles(suite, [arm, *others], gate_primary=(arm, "")).aa
