"""Classification metrics (harness.stats.classification) against the metrics guide's worked
numbers, Wilson, and the clustered design."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import mean_estimate, wilson_interval
from harness.stats.classification import (
    classification_metrics,
    confusion,
    f_beta,
    trial_predictions,
)


def _detector(tp: int, fn: int, fp: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    truth = np.repeat([1, 1, 0, 0], [tp, fn, fp, tn])
    flagged = np.repeat([1, 0, 1, 0], [tp, fn, fp, tn])
    return truth, flagged


def test_specificity_is_860_of_900():
    # metrics guide: 100 violations in 1,000 transcripts; 860 of the 900 clean ones left alone
    truth, flagged = _detector(tp=80, fn=20, fp=40, tn=860)
    out = classification_metrics(truth, flagged)
    assert out.specificity is not None
    assert out.specificity.estimate == pytest.approx(860 / 900)
    assert round(100 * out.specificity.estimate, 1) == 95.6
    lo, hi = wilson_interval(860, 900)
    assert (out.specificity.lo, out.specificity.hi) == pytest.approx((lo, hi), rel=1e-9)
    assert out.confusion.as_dict() == {"tp": 80, "fp": 40, "tn": 860, "fn": 20}
    assert out.recall is not None and out.recall.estimate == pytest.approx(0.8)
    assert out.precision is not None and out.precision.estimate == pytest.approx(80 / 120)


def test_f1_punishes_imbalance():
    # metrics guide: P = 1.0 and R = 0.1 give F1 = 0.18, not 0.55
    assert round(f_beta(1.0, 0.1), 2) == 0.18
    truth, flagged = _detector(tp=10, fn=90, fp=0, tn=900)
    out = classification_metrics(truth, flagged)
    assert out.precision is not None and out.precision.estimate == 1.0
    assert out.recall is not None and out.recall.estimate == pytest.approx(0.1)
    assert out.f1 is not None and out.f1.estimate == pytest.approx(f_beta(1.0, 0.1))
    assert round(out.f1.estimate, 2) == 0.18
    # precision 10/10: no variation, the interval is a bound, not a point
    assert out.precision.method_key == "no-variation" and out.precision.lo < 1.0


def test_f_beta_weighs_recall():
    truth, flagged = _detector(tp=30, fn=70, fp=10, tn=890)
    p, r = 30 / 40, 30 / 100
    out = classification_metrics(truth, flagged, beta=2.0)
    assert out.f1 is not None and out.f1.estimate == pytest.approx(f_beta(p, r, 2.0))
    assert f_beta(p, r, 2.0) < f_beta(p, r, 1.0)  # recall is the weak side


def test_a_detector_that_never_flags_is_accurate_and_useless():
    truth, flagged = _detector(tp=0, fn=100, fp=0, tn=900)
    out = classification_metrics(truth, flagged)
    assert out.accuracy is not None and out.accuracy.estimate == pytest.approx(0.9)
    assert out.recall is not None and out.recall.estimate == 0.0
    assert out.precision is None and "nothing was flagged" in out.missing["precision"]
    assert out.f1 is not None and out.f1.estimate == 0.0


def test_trials_of_one_task_are_not_independent_items():
    # 20 tasks x 10 trials; each task's trials agree: 20 independent answers, not 200
    rng = np.random.default_rng(3)
    truth_task = np.repeat([1, 0], 10)
    flag_task = np.where(truth_task == 1, rng.random(20) < 0.7, rng.random(20) < 0.2)
    truth, flagged = np.repeat(truth_task, 10), np.repeat(flag_task, 10).astype(float)
    tasks = np.repeat(np.arange(20), 10)
    clustered = classification_metrics(truth, flagged, tasks)
    naive = classification_metrics(truth, flagged)
    for name in ("recall", "specificity", "precision", "f1", "accuracy"):
        c, i = clustered.metric(name), naive.metric(name)
        assert c is not None and i is not None
        assert c.estimate == pytest.approx(i.estimate)
        assert c.unit == "cluster" and c.n_units <= 20
        if 0 < c.estimate < 1:
            assert c.hi - c.lo > 2 * (i.hi - i.lo), name
    # the clustered recall is the clustered mean of the positive tasks' flags
    rec = mean_estimate(flagged[truth == 1], tasks[truth == 1])
    assert clustered.recall is not None
    assert (clustered.recall.lo, clustered.recall.hi) == (rec.lo, rec.hi)


def test_weights_make_each_task_count_once():
    # task A: 1 positive trial flagged; task B: 3 positive trials missed (adaptive repeats)
    truth = np.ones(4)
    flagged = np.array([1, 0, 0, 0])
    w = np.array([1, 1 / 3, 1 / 3, 1 / 3])
    out = classification_metrics(truth, flagged, ["a", "b", "b", "b"], weights=w)
    assert out.recall is not None and out.recall.estimate == pytest.approx(0.5)
    assert confusion(truth, flagged, w).as_dict() == pytest.approx(
        {"tp": 1.0, "fp": 0.0, "tn": 0.0, "fn": 1.0}
    )


def test_a_trial_is_a_prediction_of_its_tasks_truth():
    truth = np.array([1, 1, 0, 0])
    passed = np.array([True, False, True, False])
    assert trial_predictions(truth, passed).tolist() == [1, 0, 0, 1]


@pytest.mark.parametrize(
    "truth, predicted, message",
    [([1, 2], [1, 0], "truth must be 0/1"), ([1, 0], [1], "one value per item")],
)
def test_bad_input_is_refused(truth, predicted, message):
    with pytest.raises(ValueError, match=message):
        classification_metrics(truth, predicted)
