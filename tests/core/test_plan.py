"""Seeds are stable, shared across arms and independent of suite size; order interleaves arms."""

from __future__ import annotations

from harness.config import load_suite
from harness.plan import build_plan
from tests.conftest import write_suite


def _plan(tmp, **kw):
    return build_plan(load_suite(write_suite(tmp, **kw)))


def _seeds(jobs):
    return {(j.task_id, j.trial_index): j.seed for j in jobs}


def test_same_suite_same_seeds_and_order(tmp_path):
    a = _plan(tmp_path / "a", trials=3)
    b = _plan(tmp_path / "b", trials=3)
    assert [j.key for j in a] == [j.key for j in b]
    assert [j.seed for j in a] == [j.seed for j in b]


def test_arms_share_seeds_matched_blocks(tmp_path):
    jobs = _plan(tmp_path, trials=3)
    by_key: dict = {}
    for j in jobs:
        by_key.setdefault((j.task_id, j.trial_index), set()).add(j.seed)
    assert all(len(s) == 1 for s in by_key.values())
    assert len(jobs) == 2 * 4 * 3


def test_more_trials_or_tasks_keep_existing_seeds(tmp_path):
    base = _seeds(_plan(tmp_path / "a", trials=2, n_tasks=4))
    more_trials = _seeds(_plan(tmp_path / "b", trials=5, n_tasks=4))
    more_tasks = _seeds(_plan(tmp_path / "c", trials=2, n_tasks=9))
    for key, seed in base.items():
        assert more_trials[key] == seed
        assert more_tasks[key] == seed
    assert len(set(more_trials.values())) == len(more_trials)  # all distinct


def test_different_suite_seed_changes_seeds(tmp_path):
    a = _seeds(_plan(tmp_path / "a", seed=1))
    b = _seeds(_plan(tmp_path / "b", seed=2))
    assert all(a[k] != b[k] for k in a)


def test_order_is_blocked_by_trial_index_and_interleaves_arms(tmp_path):
    jobs = _plan(tmp_path, trials=3, n_tasks=8)
    indices = [j.trial_index for j in jobs]
    assert indices == sorted(indices)  # block i finishes before block i+1 starts
    block0 = [j for j in jobs if j.trial_index == 0]
    # arms alternate task by task (each task's arms are adjacent), in seeded random order
    for i in range(0, len(block0), 2):
        assert block0[i].task_id == block0[i + 1].task_id
        assert {block0[i].arm, block0[i + 1].arm} == {"base", "cand"}
    firsts = [block0[i].arm for i in range(0, len(block0), 2)]
    assert len(set(firsts)) == 2  # neither arm always goes first
    task_orders = [[j.task_id for j in jobs if j.trial_index == i][::2] for i in range(3)]
    assert task_orders[0] != task_orders[1] or task_orders[1] != task_orders[2]
