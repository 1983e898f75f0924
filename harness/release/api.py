"""Store-facing entry points of the release commands: read rows, call the pure functions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.release.records import (
    GateResult,
    History,
    RunComparison,
    Sensitivity,
)
from harness.release.run_config import StoredSuite

if TYPE_CHECKING:
    from harness.analysis.table import Trials
    from harness.config.models import GatePolicy


def compare_runs(
    store,
    spec_a: str,
    spec_b: str,
    *,
    force: bool = False,
    confidence: float | None = None,
    allow_judge_change: bool = False,
) -> RunComparison:
    """``harness compare A B``: preconditions, the paired comparison, A/A floor, screens.

    Returns the comparison dict with ``differences`` (empty when pairable) and
    ``refused`` (True when differences exist and ``force`` is off: no numbers then).
    ``confidence``: the interval level; default the baseline run's ``report.confidence``.
    Sides judged by different judge setups raise ``JudgeChanged`` unless
    ``allow_judge_change``; then the comparison says so (``judge_change``).
    """
    from harness.analysis import settings_of
    from harness.analysis.paired import aa_floor, compare_arms, screens
    from harness.analysis.roles import aa_copy
    from harness.release.judge_setups import judge_change
    from harness.release.preconditions import differences
    from harness.release.source import resolve_side, stored_config, suite_config

    a = resolve_side(store, spec_a, "baseline")
    b = resolve_side(store, spec_b, "candidate")
    all_a = _trials(store, a.run.id)
    all_b = all_a if b.run.id == a.run.id else _trials(store, b.run.id)
    trials_a, trials_b = all_a.of_arm(a.arm), all_b.of_arm(b.arm)
    config_a, config_b = stored_config(a.run), stored_config(b.run)
    shared = set(trials_a.task_ids.tolist()) & set(trials_b.task_ids.tolist())
    changed = judge_change(config_a, config_b, shared, (a.label, b.label))
    if changed and not allow_judge_change:
        raise JudgeChanged(f"{changed}; pass --allow-judge-change to pair them anyway")
    diffs = differences(
        config_a, trials_a, config_b, trials_b, (a.label, b.label), judges_apart=bool(changed)
    )
    out: RunComparison = {
        "baseline_side": a.label,
        "candidate_side": b.label,
        "differences": diffs,
        "forced": bool(diffs) and force,
        "refused": bool(diffs) and not force,
        "judge_change": f"{changed} (allowed by --allow-judge-change)" if changed else None,
    }
    if out["refused"]:
        return out
    suite = suite_config(a.run)
    settings = replace(
        settings_of(suite).at(confidence), phase_one_trials=phase_one_trials(a.run, b.run)
    )
    c = compare_arms(trials_a, trials_b, settings)
    out = {**out, **c}
    out["within_run"] = a.run.id == b.run.id
    if not out["within_run"]:
        out["note"] = (
            "across runs: run-level drift (provider, index, grader) is not cancelled by "
            "pairing; prefer arms interleaved in one run"
        )
    aa = aa_copy(suite, list(a.run.arms), a.arm)
    out["noise_floor"] = (
        aa_floor(trials_a, all_a.of_arm(aa), aa, settings, stored_config(a.run)) if aa else None
    )
    out["screens"] = screens(trials_a, trials_b, c, settings)
    return out


class JudgeChanged(ConfigError):
    """The two sides were judged by different judge setups (exit 2)."""

    def __init__(self, message: str):
        super().__init__("compare", "", message)


def _trials(store, run_id: str) -> Trials:
    """A run's trials, with the fields release decisions read."""
    from harness.analysis.load import DECISIONS, load_run_table

    return load_run_table(store, run_id, DECISIONS).trials


def phase_one_trials(*runs) -> int | None:
    """Phase-one trials per task when any of the runs used adaptive repeats, else None."""
    from harness.release.source import suite_config

    adaptive = [r for r in runs if _repeats_mode(suite_config(r)) == "adaptive"]
    if not adaptive:
        return None
    return min(int(r.trials_per_task) for r in runs)


def _repeats_mode(suite: StoredSuite) -> str | None:
    repeats = suite.get("repeats")
    return repeats.get("mode") if repeats else None


def load_policy(path: str | Path):
    """A GatePolicy from a YAML file: the keys of a suite's ``gate:`` block, that block under
    a top-level ``gate:``, or a whole suite file (its ``gate:``)."""
    from harness.config.loader import read_yaml, validate
    from harness.config.models import GatePolicy

    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "", "no such policy file")
    data, lines = read_yaml(p)
    prefix: tuple = ()
    if isinstance(data, dict) and ("gate" in data or "arms" in data):
        if not data.get("gate"):
            raise ConfigError(str(p), "gate", "the file declares no gate: block")
        data, prefix = data["gate"], ("gate",)
    return validate(GatePolicy, data, p, lines, prefix)


def suite_name_of(name_or_file: str, store=None) -> str:
    """``harness history`` takes a suite's name, its file (whose ``name:`` is read) or, when
    no suite has that name in ``store``, a run reference (the run's suite)."""
    from harness.config.loader import read_yaml

    p = Path(name_or_file)
    if not p.is_file():
        if store is None or store.list_runs(name_or_file, limit=1):
            return name_or_file
        from harness.store.refs import RunRef, find_run

        try:
            return find_run(store, RunRef.parse(name_or_file).run).suite_name
        except ConfigError:
            return name_or_file
    data, _ = read_yaml(p)
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ConfigError(str(p), "name", "not a suite file (no name:)")
    return data["name"]


def gate_run(store, run_id: str, policy_path: str | Path | None = None) -> GateResult:
    """``harness gate RUN``: the run's policy (suite ``gate:`` or ``--policy``) applied."""
    from harness.release.source import get_run

    run = get_run(store, run_id)
    policy = gate_policy(run, policy_path)
    return gate_trials(store, run, _trials(store, run.id), policy, policy_path)


def gate_policy(run, policy_path: str | Path | None = None) -> GatePolicy:
    """The policy a gate applies: the ``--policy`` file, else the run's suite ``gate:``."""
    from harness.config.models import GatePolicy
    from harness.release.source import suite_config

    if policy_path:
        return load_policy(policy_path)
    raw = suite_config(run).get("gate")
    if not raw:
        raise ConfigError(
            run.suite_path, "gate", "the suite declares no gate; add gate: or pass --policy"
        )
    return GatePolicy.model_validate(raw)


def gate_trials(
    store, run, trials: Trials, policy: GatePolicy, policy_path: str | Path | None = None
) -> GateResult:
    """The gate on a run whose trials are loaded already (the HTML page loads them once)."""
    from harness.release.gate import evaluate_gate
    from harness.release.gate_quantity import corrected_reading
    from harness.release.source import stored_config

    corrected = None
    if policy.quantity == "corrected":
        where = (str(policy_path), "quantity") if policy_path else (run.suite_path, "gate.quantity")
        corrected = corrected_reading(store, run, policy, *where)
    out = evaluate_gate(
        trials,
        policy,
        arms=list(run.arms),
        config=stored_config(run),
        trials_per_task=run.trials_per_task,
        run_id=run.id,
        earlier=_earlier_nights(store, run, trials, policy) if policy.sequential else None,
        corrected=corrected,
    )
    out["suite"] = run.suite_name
    out["policy_source"] = str(policy_path) if policy_path else "suite gate:"
    return out


MAX_NIGHTS = 1000
"""Most earlier runs a nightly gate reads back (a season rarely holds more than 60)."""


def _earlier_nights(store, run, trials: Trials, policy) -> list:
    """The nights of the suite's runs before ``run`` back to the last restart that the run
    itself can see (``harness.release.nightly.RESTART``: tasks, graders, images or the two
    arms' configuration changed), oldest first."""
    import numpy as np

    from harness.analysis import settings_of
    from harness.release.full_suite_rows import task_hashes
    from harness.release.gate import gate_roles
    from harness.release.history import fingerprint
    from harness.release.nightly import Night, night_reading
    from harness.release.source import stored_config, suite_config

    suite = suite_config(run)
    draw = stored_config(run).get("subset")
    roles = gate_roles(policy, suite, list(run.arms))
    pair = [a for a in (roles.baseline, roles.candidate) if a]

    def shape(cfg: StoredSuite, arm: str) -> tuple[object, str, str]:
        spec: dict = next((dict(a) for a in cfg.get("arms", []) if a.get("name") == arm), {})
        return (spec.get("agent"), repr(spec.get("params")), repr(spec.get("model")))

    prints = {a: fingerprint(trials.of_arm(a)) for a in pair}
    shapes = {a: shape(suite, a) for a in pair}
    before = [
        r
        for r in store.list_runs(run.suite_name, MAX_NIGHTS + 1)
        if r.started_at < run.started_at and r.id != run.id
    ]
    nights = []
    for old in sorted(before, key=lambda r: r.started_at, reverse=True):
        cfg = suite_config(old)
        if any(a not in old.arms or shape(cfg, a) != shapes[a] for a in pair):
            break
        old_trials = _trials(store, old.id)
        by_arm = {a: old_trials.of_arm(a) for a in pair}
        old_draw = stored_config(old).get("subset")
        hashes = (task_hashes(stored_config(old)), task_hashes(stored_config(run)))
        if any(_changed(fingerprint(by_arm[a]), old_draw, prints[a], draw, hashes) for a in pair):
            break
        none = old_trials.where(np.zeros(len(old_trials), bool))
        reading = night_reading(
            by_arm.get(roles.baseline or "", none),
            by_arm[roles.candidate or ""],
            policy,
            settings_of(cfg, old.trials_per_task),
            old_draw,
        )
        if reading is not None:
            nights.append(Night(old.id, *reading))
    return nights[::-1]


def _changed(before, before_draw, now, now_draw, hashes) -> bool:
    """Whether a night cannot join tonight's season: a change of tasks, graders or images;
    between a full and a subset run (or two draws), of the suite's tasks they both estimate."""
    from harness.release.full_suite_rows import why_not_same_quantity
    from harness.release.history import why_unpairable

    if before_draw or now_draw:
        return bool(why_not_same_quantity(before, before_draw, now, now_draw, hashes))
    return bool(why_unpairable(before, now))


def run_power(
    store, run_id: str, alpha: float, power: float, heterogeneity: float = 0.5, policy=None
) -> Sensitivity:
    """``harness plan --run RUN``: the smallest lift the gate (``policy``, else the run's
    suite ``gate:``, else the improvement rule) would pass on the next run of this suite."""
    from harness.analysis import run_roles, settings_of
    from harness.config.models import GatePolicy
    from harness.release.gate import gate_roles
    from harness.release.power import run_sensitivity
    from harness.release.source import get_run, suite_config

    run = get_run(store, run_id)
    suite = suite_config(run)
    if policy is None and suite.get("gate"):
        policy = GatePolicy.model_validate(suite["gate"])
    if policy is not None and policy.rule == "threshold":
        raise ConfigError(
            run.id, "gate", "plan --run plans a comparison; use --bar for a threshold"
        )
    # the pair the gate will judge: a --policy's own pair first, as `harness gate` reads it
    arms = list(run.arms)
    roles = gate_roles(policy, suite, arms) if policy is not None else run_roles(suite, arms)
    baseline, candidate = roles.baseline, roles.candidate
    if baseline is None or candidate is None:
        raise ConfigError(run.id, "", "the run has a single arm: nothing was compared")
    # First-phase trials only: with adaptive repeats, later trials follow discordance.
    trials = _trials(store, run.id).first(run.trials_per_task)
    settings = settings_of(suite, run.trials_per_task)
    out = run_sensitivity(
        trials.of_arm(baseline),
        trials.of_arm(candidate),
        alpha,
        power,
        settings.denominator,
        policy=policy,
        cluster_key=settings.cluster_key,
        heterogeneity=heterogeneity,
    )
    out.update({"run_id": run.id, "baseline": baseline, "candidate": candidate})
    return out


def history(
    store,
    suite_name: str,
    limit: int = 30,
    confidence: float | None = None,
    sequential: bool = False,
) -> History:
    """``harness history SUITE``: the suite's last ``limit`` runs, oldest first; with
    ``sequential`` the moves are read as nights over the listed runs."""
    from harness.release.history import suite_history

    runs = store.list_runs(suite_name, limit)
    out = suite_history(
        runs,
        {r.id: _trials(store, r.id) for r in runs},
        confidence=confidence,
        sequential=sequential,
    )
    out["suite"] = suite_name
    return out
