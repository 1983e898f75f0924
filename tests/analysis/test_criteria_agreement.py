"""Per-criterion agreement carries the chance-corrected measures the trial level has:
Cohen's κ of the judge against people and Krippendorff's α among people, each computed by
the functions the trial level uses (``harness.stats.agreement``)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.judging import JudgedRun, criteria_agreement
from harness.report.render.judging import judge_blocks
from harness.stats.agreement import cohen_kappa, krippendorff_alpha


def _run() -> tuple[JudgedRun, dict[str, list]]:
    """40 trials, two criteria: people (ann, bob) label 'cites' on every trial, bob
    disagreeing with ann on every fifth; only ann labels 'polite'."""
    gen = np.random.default_rng(7)
    n = 40
    judge_cites = (gen.random(n) < 0.6).tolist()
    ann = [j if i % 4 else not j for i, j in enumerate(judge_cites)]
    bob = [not a if i % 5 == 0 else a for i, a in enumerate(ann)]
    polite = (gen.random(n) < 0.7).tolist()
    run = JudgedRun(
        trial_id=list(range(n)),
        arm=["a"] * n,
        task=[f"t{i}" for i in range(n)],
        cluster=[f"c{i}" for i in range(n)],
        passed=judge_cites,
        judged=[True] * n,
        criteria=[{"cites": judge_cites[i], "polite": polite[i]} for i in range(n)],
    )
    for i in range(n):
        run.criterion_labels[(i, "cites")] = {"ann": ann[i], "bob": bob[i]}
        run.criterion_labels[(i, "polite")] = {"ann": not polite[i] if i % 6 == 0 else polite[i]}
    return run, {"judge": judge_cites, "ann": ann, "bob": bob}


def test_each_criterion_has_kappa_and_alpha_from_the_shared_functions() -> None:
    run, said = _run()
    per = criteria_agreement(run, 0.95)
    cites = per["cites"]
    # The judge against the people's majority; a 1–1 split is a tie, left out.
    kept = [i for i in range(40) if said["ann"][i] == said["bob"][i]]
    assert cites["n"] == len(kept) and cites["tied_labels"] == 40 - len(kept)
    kappa = cohen_kappa([said["judge"][i] for i in kept], [said["ann"][i] for i in kept])
    assert cites["cohen_kappa"] == {
        "estimate": kappa.estimate,
        "lo": kappa.lo,
        "hi": kappa.hi,
        "n": kappa.n,
    }
    table = np.array([[said["ann"][i], said["bob"][i]] for i in range(40)], dtype=object)
    alpha = krippendorff_alpha(table)
    assert cites["krippendorff_alpha"]["estimate"] == pytest.approx(alpha.estimate)
    assert (cites["krippendorff_alpha"]["lo"], cites["krippendorff_alpha"]["hi"]) == (
        pytest.approx(alpha.lo),
        pytest.approx(alpha.hi),
    )
    assert cites["krippendorff_alpha"]["labellers"] == 2 and alpha.n == 40
    # One labeller: κ against the judge, no α among people.
    polite = per["polite"]
    assert polite["n"] == 40 and polite["cohen_kappa"]["n"] == 40
    assert polite["krippendorff_alpha"] is None


def test_the_per_criterion_block_shows_them_in_80_columns() -> None:
    run, _ = _run()
    summary = {
        "judged_trials": 40,
        "resolved_trials": 40,
        "unresolved_trials": 0,
        "agreement": {"n": 0, "tied_labels": 0, "note": "no trial label"},
        "criteria": criteria_agreement(run, 0.95),
        "corrected": {"n_calibration": 0, "note": "no calibration set"},
        "judge": {
            "self_disagreement": {"n": 0},
            "cost": {},
            "setups": [],
        },
    }
    block = dict(judge_blocks(summary))["Per criterion"]
    cites = block[block.index("  cites: 32 trials labelled") :]
    kappa = next(x for x in cites if x.startswith("    Cohen kappa"))
    assert "(n=32 trials)" in kappa
    alpha = next(x for x in cites if x.startswith("    Krippendorff alpha"))
    assert "among 2 people (n=40 trials)" in alpha
    polite = block[block.index("  polite: 40 trials labelled") :]
    assert any(x.startswith("    Cohen kappa") for x in polite)
    assert not any("Krippendorff" in x for x in polite)
    assert all(len(line) <= 80 for line in block), block
