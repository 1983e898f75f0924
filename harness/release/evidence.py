"""The gate's checks that come before any statistics: must-never classes (asserted, never
tested) and unresolved coverage (too many trials without a verdict means no clean verdict)."""

from __future__ import annotations

from collections import defaultdict

from harness.release.records import (
    ArmCoverage,
    Coverage,
    MustNeverCheck,
    TrialRecord,
)


def must_never_checks(
    rows_b: list[TrialRecord], classes: list[str], flagged_tasks: set[str]
) -> list[MustNeverCheck]:
    """Each must-never class (and the tasks flagged ``must_never``): any failure of the
    candidate there is a violation; a trial without a verdict leaves it unverified."""
    checks: list[MustNeverCheck] = []
    groups: dict[str, list[TrialRecord]] = {f"class {c}": [] for c in classes}
    if flagged_tasks:
        groups["tasks marked must_never"] = []
    for r in rows_b:
        cls = r.get("task_class") or "default"
        if cls in classes:
            groups[f"class {cls}"].append(r)
        if r["task_id"] in flagged_tasks:
            groups["tasks marked must_never"].append(r)
    for name, rows in groups.items():
        failed = sorted(
            {f"{r['task_id']}#{r['trial_index']}" for r in rows if r["status"] == "failed"}
        )
        unresolved = sorted(
            {
                f"{r['task_id']}#{r['trial_index']}"
                for r in rows
                if r["status"] not in ("passed", "failed")
            }
        )
        status = "violated" if failed else "unverified" if (unresolved or not rows) else "held"
        checks.append(
            {
                "name": f"must-never: {name}",
                "status": status,
                "trials": len(rows),
                "failures": failed,
                "unresolved": unresolved,
                "message": (
                    f"{len(failed)} failure(s) of the candidate: {', '.join(failed[:10])}"
                    if failed
                    else f"{len(unresolved)} trial(s) without a verdict"
                    if unresolved
                    else "no trials of the candidate in this class"
                    if not rows
                    else f"0 failures in {len(rows)} trials (asserted, not tested)"
                ),
            }
        )
    return checks


def coverage_check(rows: dict[str, list[TrialRecord]], limit: float) -> Coverage:
    """The share of trials without a verdict per arm (and per class where any) against
    ``limit``: missing evidence is no verdict, never a failure of the agent."""
    arms: dict[str, ArmCoverage] = {}
    by_class: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for arm, rs in rows.items():
        unresolved = sum(1 for r in rs if r["status"] not in ("passed", "failed"))
        arms[arm] = {
            "trials": len(rs),
            "unresolved": unresolved,
            "share": unresolved / len(rs) if rs else 1.0,
        }
        for r in rs:
            c = by_class[r.get("task_class") or "default"][arm]
            c[0] += r["status"] not in ("passed", "failed")
            c[1] += 1
    worst = max((a["share"] for a in arms.values()), default=1.0)
    return {
        "name": "unresolved coverage",
        "limit": limit,
        "arms": arms,
        "by_class": {
            cls: {arm: {"unresolved": u, "trials": n} for arm, (u, n) in d.items()}
            for cls, d in sorted(by_class.items())
            if any(u for u, _ in d.values())
        },
        "worst_share": worst,
        "status": "ok" if worst <= limit else "exceeded",
    }
