"""The quantity a gate reads: the rates as graded, or corrected for a judge's error.

With ``quantity: corrected`` a judged suite's gate reads its rates corrected with the run's
human labels: ``harness.analysis.judging.corrected`` (Rogan–Gladen; the interval carries the
clustered sampling error and the calibration error of sensitivity and specificity), the
numbers ``harness judge-agreement`` prints, at the gate's interval level. The threshold rule
reads the candidate's corrected rate with decision bounds as careful as the raw rule's (the
more cautious of that interval and the same Monte Carlo over the judged rate's cautious,
skew-aware bounds); the comparative rules read the corrected paired delta,
and the improvement rule keeps its exact test on the judged verdicts (one judge grades both
arms, so when people would see no difference the judged rates are equal too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError
from harness.release.quantity import GateQuantity
from harness.stats.judge_correction import CorrectedRecord

if TYPE_CHECKING:
    from harness.config.models import GatePolicy
    from harness.release.records import Comparison


def corrected_reading(
    store: Any, run: Any, policy: GatePolicy, source: str, field: str
) -> dict[str, Any]:
    """The run's corrected rates at the gate's interval level (``judging.corrected``).

    Raises ``ConfigError`` naming ``source`` (the suite or policy file) and ``field`` when
    the run cannot give them: no judged trial, no human labels, several judge setups, a
    judge no better than chance on its labels, or adaptive repeats (the corrected rates
    read every trial, the gate only phase one).
    """
    from harness.analysis.judging import corrected, judged_run
    from harness.analysis.load import load_trial_rows
    from harness.release.gate_reading import gate_roles, interval_level
    from harness.release.source import suite_config
    from harness.store.labels import run_labels

    suite = suite_config(run)
    if (suite.get("repeats") or {}).get("mode") == "adaptive":
        raise ConfigError(source, field, "quantity 'corrected' does not read adaptive repeats")
    judged = judged_run(load_trial_rows(store, run.id), run_labels(store.engine, run.id))
    if not any(judged.judged):
        raise ConfigError(
            source, field, f"'corrected' needs a judged suite: run {run.id} has no judge verdict"
        )
    if not judged.labels:
        raise ConfigError(
            source,
            field,
            f"'corrected' needs human labels of run {run.id}'s judged trials "
            f"(harness label {run.id} FILE, or on the trials' pages in harness view); it has none",
        )
    roles = gate_roles(policy, suite, list(run.arms))
    out = corrected(judged, roles, interval_level(policy), cautious=policy.rule == "threshold")
    if "note" in out:
        raise ConfigError(source, field, f"'corrected' cannot be read: {out['note']}")
    return out


def corrected_decision(
    reading: dict[str, Any],
    policy: GatePolicy,
    primary: Comparison | None,
    candidate: str,
    raw_verdict: str,
) -> tuple[str, str, GateQuantity]:
    """(verdict, why, quantity record) of the policy's rule on the corrected rates."""
    from harness.release.gate_reading import bar_verdict, bound_words, primary_verdict

    level = interval_level_of(reading)
    if policy.rule == "threshold" and candidate not in reading["arms"]:
        return _nothing(f"{candidate} has no judged trial with a verdict", raw_verdict)
    if policy.rule == "threshold":
        rec: CorrectedRecord = reading["arms"][candidate]["corrected"]
        what = f"{candidate}'s rate"
        ci = f"{bound_words(policy, policy.confidence)} bounds [{rec['lo']:.3f}, {rec['hi']:.3f}]"
        verdict, why = bar_verdict(rec["lo"], rec["hi"], float(policy.bar or 0), ci)
    elif reading.get("delta") is None or primary is None:
        return _nothing("no task was judged in both arms: nothing to compare", raw_verdict)
    else:
        rec = reading["delta"]["corrected"]
        what = "paired delta"
        shown: Comparison = {**primary, "estimate": rec["estimate"], "lo": rec["lo"]}
        shown["hi"] = rec["hi"]
        verdict, why = primary_verdict(shown, policy)
    note = (
        f"corrected {what} {rec['estimate']:.3f} [{rec['lo']:.3f}, {rec['hi']:.3f}] at "
        f"{level:.0%}, raw {rec['raw']:.3f} ({rec['n_calibration']} human labels: sensitivity "
        f"{rec['sensitivity']:.3f}, specificity {rec['specificity']:.3f}); the raw rates say "
        f"{raw_verdict}"
    )
    quantity: GateQuantity = {
        "used": "corrected",
        "text": f"quantity: corrected for judge error (Rogan–Gladen): {note}",
        "raw_verdict": raw_verdict,
        "corrected": rec,
    }
    return verdict, f"{why}; on rates corrected for judge error", quantity


def _nothing(why: str, raw_verdict: str) -> tuple[str, str, GateQuantity]:
    """No verdict on corrected rates, and why."""
    text = f"quantity: corrected for judge error: {why}; the raw rates say {raw_verdict}"
    return (
        "no-verdict",
        why,
        {
            "used": "corrected",
            "text": text,
            "raw_verdict": raw_verdict,
            "corrected": None,
        },
    )


def interval_level_of(reading: dict[str, Any]) -> float:
    """The two-sided level the corrected intervals were computed at."""
    for arm in (reading.get("arms") or {}).values():
        return float(arm["corrected"]["confidence"])
    return float("nan")
