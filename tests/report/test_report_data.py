"""The report's numbers against direct computations with harness.stats, on known stores."""

from __future__ import annotations

import json

import numpy as np
import pytest

import harness.stats as hs
from harness.report import load_report
from tests.report.report_support import grid_rows, make_store, trial

RESAMPLES = 2000


def _report(url: str, **kw) -> dict:
    return load_report("run-1", url, n_resamples=RESAMPLES, **kw)


def _random_outcomes(n_tasks: int, trials: int, seed: int = 0) -> dict[str, list[int]]:
    rng = np.random.default_rng(seed)
    p = rng.beta(1.0, 0.7, n_tasks)
    return {f"t{i:02d}": [int(u < p[i]) for u in rng.random(trials)] for i in range(n_tasks)}


@pytest.fixture
def known(store_url):
    """36 tasks in 12 clusters (3 tasks each) and 3 classes, 4 trials each, two arms."""
    outcomes = _random_outcomes(36, 4, seed=1)
    clusters = {t: f"c{i // 3}" for i, t in enumerate(outcomes)}
    classes = {t: ("a", "b", "c")[i % 3] for i, t in enumerate(outcomes)}
    rows = grid_rows("base", outcomes, clusters, classes)
    rows += grid_rows("cand", _random_outcomes(36, 4, seed=2), clusters, classes)
    make_store(store_url, rows, trials=4, crashed_attempts={"base": 3})
    return outcomes, clusters, classes


def test_sections_match_direct_statistics(known, store_url):
    outcomes, clusters, classes = known
    data = _report(store_url)
    arm = data["arms"]["base"]
    tasks = sorted(outcomes)
    n = np.array([len(outcomes[t]) for t in tasks])
    c = np.array([sum(outcomes[t]) for t in tasks])
    rates = c / n
    labels = [clusters[t] for t in tasks]

    assert arm["tasks"] == 36 and arm["clusters"] == 12
    assert arm["trials_scheduled"] == arm["trials_completed"] == 144
    assert arm["trials_unresolved"] == 0 and arm["trials_missing"] == 0
    assert arm["by_status"] == {"passed": int(c.sum()), "failed": int((n - c).sum())}

    mi = hs.mean_ci_clustered(rates, labels, 0.95)
    s = arm["success"]
    assert s["estimate"] == pytest.approx(rates.mean())
    # the audited CR1 + t(C − 1) SE (equal cluster sizes: CR2 is CR1), interval on the logit
    # scale (docs/statistics.md)
    from harness.stats.bounds import logit_bounds

    lo, hi = logit_bounds(np.array([mi.estimate]), np.array([mi.se]), np.array([mi.critical]))
    assert (s["lo"], s["hi"]) == pytest.approx((lo[0], hi[0]))
    assert s["n"] == 36 and s["n_clusters"] == 12 and "cluster-robust" in s["method"]

    assert [p["k"] for p in arm["pass_hat_k"]] == [1, 2, 3, 4]
    for p, q in zip(arm["pass_hat_k"], arm["pass_at_k"], strict=True):
        assert p["estimate"] == pytest.approx(hs.mean_pass_hat_k(n, c, p["k"]))
        assert q["estimate"] == pytest.approx(hs.mean_pass_at_k(n, c, q["k"]))
        assert p["lo"] <= p["estimate"] <= p["hi"] and q["lo"] <= q["estimate"] <= q["hi"]
        assert p["n"] == 36
    assert arm["unstable_tasks"] == int(((c > 0) & (c < n)).sum())
    assert (
        arm["unstable_tasks"]
        == hs.unstable_tasks(np.repeat(tasks, 4), np.concatenate([outcomes[t] for t in tasks])).size
    )

    by_class = {r["name"]: r for r in arm["slices"]["class"]}
    for name in ("a", "b", "c"):
        mask = np.array([classes[t] == name for t in tasks])
        mean = rates[mask].mean()
        lo, hi = hs.wilson_interval(mean * mask.sum(), mask.sum())
        r = by_class[name]
        assert r["tasks"] == r["n"] == 12 and r["trials"] == 48
        assert r["estimate"] == pytest.approx(mean)
        assert (r["lo"], r["hi"]) == pytest.approx((lo, hi))
    assert len(arm["slices"]["cluster"]) == 12

    consistency = arm["reliability"]["consistency"]
    assert consistency["k"] == 4
    assert consistency["estimate"] == pytest.approx(
        hs.consistency(np.repeat(tasks, 4), np.concatenate([outcomes[t] for t in tasks]), 4)
    )
    # Crash accounting: 144 ok attempts plus 3 infra_error attempts.
    infra = arm["infra"]
    assert infra["attempts"] == 147 and infra["infra_error_attempts"] == 3
    assert infra["crash_rate"]["estimate"] == pytest.approx(3 / 147)
    assert infra["crash_rate"]["n"] == 147

    pred = arm["pass_hat_k_predicted"]
    assert pred["prediction"] is True
    assert [p["k"] for p in pred["points"]] == [8, 16, 32]
    from harness.stats.passk_predict import predict_pass_k

    ext = predict_pass_k(c, n, [8], n_boot=200, rng=7, clusters=labels)
    assert ext.withheld is None and pred["model"] == ext.model
    assert pred["a"] == pytest.approx(ext.a, rel=1e-6) and pred["b"] == pytest.approx(ext.b)
    assert pred["always_pass"] == pytest.approx(ext.always_pass, abs=1e-12)
    assert pred["never_pass"] == pytest.approx(ext.never_pass, abs=1e-12)
    assert pred["points"][0]["estimate"] == pytest.approx(ext.estimate[0], rel=1e-6)
    assert pred["check"]["p_value"] == pytest.approx(ext.check_p)
    # the interval holds the model-free bound as well as the model's own interval
    b_lo, b_hi = ext.bounds([p["k"] for p in pred["points"]])
    for p, lo, hi in zip(pred["points"], b_lo, b_hi, strict=True):
        assert p["lo"] <= min(p["estimate"], lo) and p["hi"] >= max(p["estimate"], hi)
    assert "model-free bound" in pred["method"]

    v = data["versions"]
    assert v["harness_version"] == "0.test" and v["config_hash"] == "abc123"
    assert v["trial_image_ids"] == ["sha256:img"]
    assert v["grader_versions"] == {"answer_match": ["1"]}
    assert data["estimand"] and data["sampling_unit"].startswith("cluster")


def _rate_records(node, path="$"):
    if isinstance(node, dict):
        if isinstance(node.get("estimate"), float):
            yield path, node
        for k, v in node.items():
            yield from _rate_records(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _rate_records(v, f"{path}[{i}]")


def test_json_is_strict_and_every_rate_has_n_and_interval(known, store_url):
    data = _report(store_url)
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    records = list(_rate_records(data))
    assert len(records) > 50
    for path, rec in records:
        if path.startswith("$.comparison.tasks"):
            continue  # per-task rows of the comparison (plain per-task rates)
        assert "lo" in rec and "hi" in rec, path
        assert rec["lo"] is not None and rec["hi"] is not None, path
        has_n = any(k in rec for k in ("n", "n_tasks", "n_pairs"))
        assert has_n, path


def test_denominator_policy_switches_unresolved(store_url, tmp_path):
    outcomes = {"t0": [1, 1, 0, 1], "t1": [0, 0, 1, 1], "t2": [1, 1, 1, 1]}
    rows = grid_rows("a", outcomes)
    # t0's trial 4 and t2's trials 4, 5 crashed; t1's trial 4 had a grader error.
    rows += [
        trial("a", "t0", 4, "infra_error", cost_usd=None),
        trial("a", "t1", 4, "grader_error"),
        trial("a", "t2", 4, "infra_error", cost_usd=None),
        trial("a", "t2", 5, "infra_error", cost_usd=None),
    ]
    make_store(store_url, rows, trials=6, suite={"denominator": "failure"})
    fail = _report(store_url)["arms"]["a"]
    url2 = f"sqlite:///{tmp_path / 'excl.db'}"
    make_store(url2, rows, trials=6, suite={"denominator": "exclude"})
    excl = _report(url2)["arms"]["a"]

    for arm in (fail, excl):
        assert arm["trials_completed"] == 16 and arm["trials_unresolved"] == 4
        assert arm["infra"]["infra_error_trials"] == 3
        assert arm["infra"]["grader_error_trials"] == 1
    assert fail["denominator"] == "failure" and excl["denominator"] == "exclude"
    # failure: t0 3/5, t1 2/5, t2 4/6; exclude: 3/4, 2/4, 4/4.
    assert fail["success"]["estimate"] == pytest.approx(np.mean([3 / 5, 2 / 5, 4 / 6]))
    assert fail["success"]["n_trials"] == 16
    assert excl["success"]["estimate"] == pytest.approx(np.mean([3 / 4, 2 / 4, 1.0]))
    assert excl["success"]["n_trials"] == 12
    assert fail["pass_hat_k"][0]["estimate"] == pytest.approx(fail["success"]["estimate"])
    # pass^k for k beyond some tasks' counted trials uses only the tasks that have k.
    k5 = next(p for p in fail["pass_hat_k"] if p["k"] == 5)
    assert k5["n"] == 3
    assert [p["k"] for p in excl["pass_hat_k"]] == [1, 2, 3, 4]


def test_unresolved_only_task_is_dropped_under_exclude(tmp_path):
    rows = grid_rows("a", {"t0": [1, 0], "t1": [1, 1]})
    rows += [trial("a", "t2", 0, "infra_error"), trial("a", "t2", 1, "harness_error")]
    url = f"sqlite:///{tmp_path / 'e.db'}"
    make_store(url, rows, trials=2, suite={"denominator": "exclude"})
    arm = _report(url)["arms"]["a"]
    assert arm["tasks"] == 3 and arm["tasks_without_resolved_trials"] == 1
    assert arm["success"]["n"] == 2
    assert arm["infra"]["harness_error_trials"] == 1


def test_unknown_cost_stays_unknown(tmp_path):
    rows = grid_rows("a", {"t0": [1, 0, 1], "t1": [0, 1, 1]})
    rows[0]["cost_usd"] = None
    rows[4]["cost_usd"] = None
    url = f"sqlite:///{tmp_path / 'c.db'}"
    make_store(url, rows, trials=3)
    cost = _report(url)["arms"]["a"]["usage"]["cost"]
    assert cost["unknown_trials"] == 2 and cost["known_trials"] == 4
    assert cost["total_usd"] == pytest.approx(0.04)
    assert cost["per_trial_usd"]["estimate"] == pytest.approx(0.01)
    # Known-cost trials: t0 #1 (fail), #2 (pass); t1 #0 (fail), #2 (pass): 2 successes.
    assert cost["per_success_usd"]["estimate"] == pytest.approx(0.02)
    assert "2 of 6 trials have an unknown cost (2 with an unknown price)" in cost["note"]

    rows = grid_rows("a", {"t0": [1, 0], "t1": [0, 1]}, cost_usd=None)
    url = f"sqlite:///{tmp_path / 'c2.db'}"
    make_store(url, rows, trials=2)
    data = _report(url)
    cost = data["arms"]["a"]["usage"]["cost"]
    assert cost["total_usd"] is None and cost["per_trial_usd"] is None
    assert cost["per_success_usd"] is None and cost["unknown_trials"] == 4
    assert cost["note"].startswith("unknown")
    from harness.report.render.markdown import render_markdown

    assert "cost total unknown" in render_markdown(data)


def test_tokens_latency_and_warning_under_100_trials(tmp_path):
    rows = grid_rows("a", {f"t{i}": [1, 0, 1] for i in range(10)})
    url = f"sqlite:///{tmp_path / 'l.db'}"
    make_store(url, rows, trials=3)
    usage = _report(url)["arms"]["a"]["usage"]
    lat = np.array([r["latency_s"] for r in rows])
    assert usage["latency"]["n"] == 30
    assert usage["latency"]["p50_s"] == pytest.approx(np.percentile(lat, 50))
    assert usage["latency"]["p95_s"] == pytest.approx(np.percentile(lat, 95))
    assert "< 100" in usage["latency"]["warning"]
    assert usage["tokens"]["in"] == 3000 and usage["tokens"]["cached"] == 300
    assert usage["tokens"]["out"] == 600 and usage["tokens"]["per_trial"]["in"] == 100
    assert usage["steps"]["mean"] == 3

    rows = grid_rows("a", {f"t{i}": [1, 0, 1, 1, 0] for i in range(20)})
    url = f"sqlite:///{tmp_path / 'l2.db'}"
    make_store(url, rows, trials=5)
    data = _report(url)
    assert "warning" not in data["arms"]["a"]["usage"]["latency"]
    assert not any("latency" in w for w in data["warnings"])


def test_variants_give_a_robustness_figure(tmp_path):
    rng = np.random.default_rng(3)
    rows, orig, pert, groups = [], [], [], []
    for t in range(8):
        for i in range(3):
            y = int(rng.random() < 0.8)
            yv = int(rng.random() < 0.5)
            rows.append(trial("a", f"t{t}", i, "passed" if y else "failed"))
            rows.append(trial("a", f"t{t}", i, "passed" if yv else "failed", variant="reworded"))
            orig.append(y)
            pert.append(yv)
            groups.append(f"t{t}")
    url = f"sqlite:///{tmp_path / 'v.db'}"
    make_store(url, rows, trials=3, suite={"variants": True})
    arm = _report(url)["arms"]["a"]
    # Variant trials do not enter the headline rate.
    assert arm["trials_completed"] == 24
    assert arm["success"]["estimate"] == pytest.approx(np.mean(orig))
    rob = arm["reliability"]["robustness"]
    direct = hs.robustness_drop(orig, pert, clusters=groups)
    assert rob["n_pairs"] == 24 and rob["n_tasks"] == 8 and rob["variants"] == ["reworded"]
    assert rob["estimate"] == pytest.approx(direct.estimate)
    assert (rob["lo"], rob["hi"]) == pytest.approx(direct.ci)
    assert rob["variant_rate"] == pytest.approx(np.mean(pert))


def test_confidence_gives_ece(tmp_path):
    rng = np.random.default_rng(4)
    rows, conf, ys = [], [], []
    for t in range(10):
        for i in range(4):
            cf = float(rng.uniform(0.3, 1.0))
            y = int(rng.random() < cf - 0.2)
            rows.append(trial("a", f"t{t}", i, "passed" if y else "failed", confidence=cf))
            conf.append(cf)
            ys.append(y)
    url = f"sqlite:///{tmp_path / 'e.db'}"
    make_store(url, rows, trials=4)
    cal = _report(url)["arms"]["a"]["reliability"]["calibration"]
    assert cal["ece"] == pytest.approx(hs.expected_calibration_error(conf, ys, 10))
    assert cal["n"] == 40 and cal["bins"] == 10
    assert cal["lo"] <= cal["ece"] <= cal["hi"] or cal["lo"] <= cal["hi"]


def test_no_confidence_means_no_calibration(known, store_url):
    assert _report(store_url)["arms"]["base"]["reliability"]["calibration"] is None


def test_harm_share_and_severity(tmp_path):
    sev = [0, 0, 3, 0, 1, 0, 0, 0, 2, 0, 0, 0]
    rows = [
        trial("a", f"t{j // 3}", j % 3, "failed" if s else "passed", harm_severity=float(s))
        for j, s in enumerate(sev)
    ]
    url = f"sqlite:///{tmp_path / 'h.db'}"
    make_store(url, rows, trials=3)
    harm = _report(url)["arms"]["a"]["reliability"]["harm"]
    share, mean_sev = hs.harm_rate(sev)
    assert harm["estimate"] == pytest.approx(share)
    assert harm["mean_severity"] == pytest.approx(mean_sev)
    assert harm["harmful_trials"] == 3 and harm["trials"] == 12 and harm["n"] == 4
    assert harm["lo"] <= harm["estimate"] <= harm["hi"]


def test_stratified_estimate_with_kish(tmp_path):
    # Estimands guide in miniature: over-sampled joins (weight 0.3) vs lookups (weight 2.4).
    outcomes = {f"j{i}": [int(i < 12)] for i in range(20)}
    outcomes.update({f"l{i}": [int(i < 9)] for i in range(10)})
    rows = []
    for t, ys in outcomes.items():
        join = t.startswith("j")
        rows += grid_rows(
            "a",
            {t: ys},
            stratum="join" if join else "lookup",
            weight=0.3 if join else 2.4,
        )
    url = f"sqlite:///{tmp_path / 's.db'}"
    make_store(url, rows, trials=1)
    st = _report(url)["arms"]["a"]["stratified"]
    est, se = hs.stratified_estimate([0.6, 0.9], [20, 10], [0.2, 0.8])
    # The shared method with tasks as units: the estimands guide's SE times the CR1 factor sqrt(n/(n − 1)).
    assert st["estimate"] == pytest.approx(est)
    assert st["se"] == pytest.approx(se * (30 / 29) ** 0.5)
    assert st["n_eff"] == pytest.approx(hs.kish_effective_n([0.3] * 20 + [2.4] * 10))
    assert {s["name"]: s["weight_share"] for s in st["strata"]} == pytest.approx(
        {"join": 0.2, "lookup": 0.8}
    )


def test_no_strata_and_unit_weights_means_no_stratified_section(known, store_url):
    assert _report(store_url)["arms"]["base"]["stratified"] is None


def _interval_width(tmp_path, name: str, outcomes: dict[str, list[int]], clusters=None) -> float:
    url = f"sqlite:///{tmp_path / name}"
    trials = max(len(v) for v in outcomes.values())
    make_store(url, grid_rows("a", outcomes, clusters), trials=trials)
    s = _report(url)["arms"]["a"]["success"]
    return s["hi"] - s["lo"]


def test_more_trials_per_task_do_not_shrink_the_interval_like_more_tasks(tmp_path):
    base = {f"t{i}": y for i, y in enumerate([[1, 0], [1, 1], [0, 0], [1, 0]] * 5)}
    twice_trials = {t: y * 2 for t, y in base.items()}  # same per-task rates
    twice_tasks = {**base, **{f"u{t}": y for t, y in base.items()}}
    w_base = _interval_width(tmp_path, "b.db", base)
    w_trials = _interval_width(tmp_path, "t.db", twice_trials)
    w_tasks = _interval_width(tmp_path, "k.db", twice_tasks)
    assert w_trials == pytest.approx(w_base)  # repeated trials carry no new task information
    assert w_tasks < 0.8 * w_base  # doubling tasks shrinks it by about 1/sqrt(2)
    # The same holds with clusters (tasks c{i % 10}) and the cluster-robust interval.
    clus = {t: f"c{i % 10}" for i, t in enumerate(base)}
    clus2 = {**clus, **{f"u{t}": f"d{i % 10}" for i, t in enumerate(base)}}
    w_base = _interval_width(tmp_path, "cb.db", base, clus)
    w_trials = _interval_width(tmp_path, "ct.db", twice_trials, clus)
    w_tasks = _interval_width(tmp_path, "ck.db", twice_tasks, clus2)
    assert w_trials == pytest.approx(w_base)
    assert w_tasks < 0.8 * w_base


def test_few_clusters_keep_clusters_with_t_and_a_warning(tmp_path):
    outcomes = _random_outcomes(12, 3, seed=5)
    clusters = {t: f"c{i % 3}" for i, t in enumerate(outcomes)}
    url = f"sqlite:///{tmp_path / 'f.db'}"
    make_store(url, grid_rows("a", outcomes, clusters), trials=3)
    data = _report(url)
    arm = data["arms"]["a"]
    # Few clusters never fall back to tasks (that under-covers): CR2 + t on 2 df, warned.
    assert arm["unit"]["kind"] == "cluster"
    assert "Student t with 2.0 Imbens–Kolesár df" in arm["success"]["method"]
    assert "only 3 clusters" in arm["success"]["warning"]
    assert any("only 3 clusters" in w for w in data["warnings"])
    for p in arm["pass_hat_k"]:
        assert "t with 2.0 Imbens–Kolesár" in p["method"] and p["hi"] > p["lo"]

    url = f"sqlite:///{tmp_path / 'one.db'}"
    make_store(url, grid_rows("a", outcomes, {t: "c0" for t in outcomes}), trials=3)
    arm = _report(url)["arms"]["a"]
    assert arm["unit"]["kind"] == "task" and "one cluster" in arm["success"]["warning"]

    url = f"sqlite:///{tmp_path / 'k.db'}"
    outcomes = _random_outcomes(30, 3, seed=6)
    clusters = {t: f"c{i % 10}" for i, t in enumerate(outcomes)}
    make_store(
        url, grid_rows("a", outcomes, clusters), trials=3, suite={"report": {"cluster_key": "task"}}
    )
    arm = _report(url)["arms"]["a"]
    assert arm["unit"]["kind"] == "task" and "cluster_key" in arm["unit"]["reason"]
    assert "warning" not in arm["success"]


def test_report_k_values_are_honoured(tmp_path):
    url = f"sqlite:///{tmp_path / 'k.db'}"
    make_store(
        url,
        grid_rows("a", _random_outcomes(10, 6, seed=8)),
        trials=6,
        suite={"report": {"k": [1, 3, 6, 10]}},
    )
    arm = _report(url)["arms"]["a"]
    assert [p["k"] for p in arm["pass_hat_k"]] == [1, 3, 6]  # k=10 > trials is not estimable
    assert [p["k"] for p in arm["pass_hat_k_predicted"]["points"]] == [8, 12, 16, 24, 32]


def test_pass_k_uses_the_shared_interval_method(tmp_path):
    outcomes = _random_outcomes(80, 3, seed=9)
    clusters = {t: f"c{i % 40}" for i, t in enumerate(outcomes)}
    url = f"sqlite:///{tmp_path / 'b.db'}"
    make_store(url, grid_rows("a", outcomes, clusters), trials=3)
    arm = _report(url)["arms"]["a"]
    p = arm["pass_hat_k"][1]
    assert "CR2" in p["method"] and "t with 39.0 Imbens–Kolesár df" in p["method"]
    tasks = sorted(outcomes)
    n = np.full(80, 3)
    c = np.array([sum(outcomes[t]) for t in tasks])
    exact = hs.mean_estimate(hs.pass_hat_k(n, c, 2), [clusters[t] for t in tasks])
    assert (p["lo"], p["hi"]) == pytest.approx((exact.lo, exact.hi))
    assert exact.method_key == "logit-cr2"
    # with 40 clusters a cluster bootstrap agrees to within a few points
    ref = hs.cluster_bootstrap_ci(
        hs.pass_hat_k(n, c, 2), [clusters[t] for t in tasks], n_resamples=RESAMPLES, rng=1
    )
    assert p["lo"] == pytest.approx(ref.ci[0], abs=0.03)
    assert p["hi"] == pytest.approx(ref.ci[1], abs=0.03)


def test_arm_without_trials_and_missing_trials(tmp_path):
    rows = grid_rows("a", {"t0": [1], "t1": [0]})
    url = f"sqlite:///{tmp_path / 'm.db'}"
    tasks = {"t0": {}, "t1": {}, "t2": {}}
    make_store(url, rows, arms=["a", "b"], trials=2, tasks=tasks)
    data = _report(url)
    a, b = data["arms"]["a"], data["arms"]["b"]
    assert a["trials_scheduled"] == 6 and a["trials_missing"] == 4
    assert b["tasks"] == 0 and b["success"] is None and b["pass_hat_k"] == []
    assert any("never finished" in w for w in data["warnings"])
    json.dumps(data, allow_nan=False)


def test_postgres_store_gives_the_same_report(postgres_url, tmp_path):
    """The raw queries run on PostgreSQL too (JSON columns, booleans, %s parameters)."""
    import uuid

    from sqlalchemy import create_engine, text

    db = f"report_{uuid.uuid4().hex[:8]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {db}"))
    admin.dispose()
    pg = postgres_url.rsplit("/", 1)[0] + f"/{db}"
    outcomes = _random_outcomes(12, 3, seed=10)
    clusters = {t: f"c{i % 6}" for i, t in enumerate(outcomes)}
    rows = grid_rows("a", outcomes, clusters, confidence=0.7)
    rows += [trial("a", "t00", 3, "infra_error", cost_usd=None)]
    rows += [trial("a", "t01", i, "failed", variant="v1") for i in range(3)]
    lite = f"sqlite:///{tmp_path / 'lite.db'}"
    make_store(pg, rows, trials=3, suite={"variants": True}).close()
    make_store(lite, rows, trials=3, suite={"variants": True}).close()
    a, b = _report(pg), _report(lite)
    assert a["arms"] == b["arms"]
    assert a["versions"]["grader_versions"] == {"answer_match": ["1"]}


def test_slices_use_their_own_clusters_and_warn_on_one(tmp_path):
    outcomes = _random_outcomes(40, 2, seed=12)
    tasks = sorted(outcomes)
    clusters = {t: f"c{i % 8}" for i, t in enumerate(tasks)}
    url = f"sqlite:///{tmp_path / 'sl.db'}"
    make_store(url, grid_rows("a", outcomes, clusters), trials=2)
    arm = _report(url)["arms"]["a"]
    for s in arm["slices"]["cluster"]:  # one cluster each: its tasks, with a warning
        assert "one cluster" in s["warning"] and s["hi"] > s["lo"]
    (cls,) = arm["slices"]["class"]  # every task in one class: 8 clusters, CR2 + t
    assert "8 clusters" in cls["method"] and cls["lo"] == arm["success"]["lo"]
