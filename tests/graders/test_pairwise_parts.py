"""The pairwise judge's parts without a run: reading replies, positions to arms, which
pairs are judged, and the judge file."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.pairwise.judging import _arm_of, by_arm, instruction_of, plan
from harness.pairwise.prompt import PairwiseReplyError, parse, render
from harness.pairwise.setup import DEFAULT_QUESTION, load_setup
from harness.pairwise.summary import clusters_of
from harness.store.tables import Run, Trial


@pytest.mark.parametrize(
    ("text", "winner"),
    [
        ('{"winner": "A", "reason": "it adds up"}', "A"),
        ('```json\n{"winner": "b", "reason": "x"}\n```', "B"),
        ('Here you go: {"winner": "tie", "reason": "same"} thanks', "tie"),
        ('{"winner": "Response B"}', "B"),
        ("A", "A"),
        ("tie.", "tie"),
        ('"B"', "B"),
    ],
)
def test_a_reply_naming_a_winner_is_read(text: str, winner: str) -> None:
    assert parse(text)[0] == winner


@pytest.mark.parametrize(
    "text",
    ["", "   ", "Both look fine to me.", '{"winner": "C"}', '{"reason": "no winner"}', "AB"],
)
def test_a_reply_naming_no_winner_is_garbage(text: str) -> None:
    with pytest.raises(PairwiseReplyError):
        parse(text)


def test_a_position_is_turned_into_the_arm_shown_there() -> None:
    assert _arm_of("A", "A") == "A" and _arm_of("B", "A") == "B"
    assert _arm_of("A", "B") == "B" and _arm_of("B", "B") == "A"


def _trial(id: int, arm: str, task: str, index: int, status: str = "passed") -> Trial:
    at = datetime(2026, 1, 1)
    return Trial(
        id=id,
        run_id="r",
        arm=arm,
        task_id=task,
        trial_index=index,
        seed=7,
        cluster="c",
        task_class="",
        status=status,
        started_at=at,
        finished_at=at,
    )


def test_every_pair_of_arms_is_planned_in_both_orders_and_gaps_are_counted() -> None:
    trials = [
        _trial(1, "x", "t0", 0),
        _trial(2, "y", "t0", 0),
        _trial(3, "z", "t0", 0, status="infra_error"),
        _trial(4, "x", "t1", 0),
        _trial(5, "y", "t1", 0, status="grader_error"),  # the agent left an output
    ]
    jobs, skipped = plan(by_arm(trials, ["x", "y", "z"]))
    got = sorted((j.arm_a, j.arm_b, j.a.task_id, j.shown_first) for j in jobs)
    assert got == [
        ("x", "y", "t0", "A"),
        ("x", "y", "t0", "B"),
        ("x", "y", "t1", "A"),
        ("x", "y", "t1", "B"),
    ]
    assert skipped == {
        "one side's agent left no output (infra_error)": 2,  # x-z and y-z on t0
        "one side has no trial of that task and index": 2,  # x-z and y-z on t1
    }


def test_the_prompt_shows_both_responses_in_order_and_the_variant_instruction() -> None:
    config = {
        "tasks": {"t": {"instruction": "Add.", "variants": [{"id": "v", "instruction": "Sum."}]}}
    }
    assert instruction_of(config, "t", "") == "Add." and instruction_of(config, "t", "v") == "Sum."
    prompt = render("Add.", DEFAULT_QUESTION, "Be exact.", "first one", "second one")
    assert prompt.index("=== Response A ===\nfirst one") < prompt.index("=== Response B ===")
    assert "Rubric:\nBe exact." in prompt and DEFAULT_QUESTION in prompt


def test_the_judge_file_names_the_model_that_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.yaml"
    path.write_text("model:\n  name: ${PW_MODEL:-small}\n  base_url: 'http://x/v1'\n")
    monkeypatch.delenv("PW_MODEL", raising=False)
    small = load_setup(path)
    monkeypatch.setenv("PW_MODEL", "large")
    large = load_setup(path)
    assert (small.model.name, large.model.name) == ("small", "large")
    assert small.setup_hash() != large.setup_hash()  # another judge: nothing is reused
    path.write_text("model:\n  name: ${PW_UNSET_MODEL}\n")
    with pytest.raises(ConfigError) as err:
        load_setup(path)
    assert "j.yaml:2" in str(err.value) and "'model.name'" in str(err.value)


def test_the_judge_file_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "j.yaml"
    path.write_text("model: {name: m, base_url: 'http://x/v1'}\nrubric: Be exact.\n")
    setup = load_setup(path)
    assert setup.question == DEFAULT_QUESTION and setup.reads == ["conversation", "answer"]
    other = tmp_path / "k.yaml"
    other.write_text("model: {name: m, base_url: 'http://x/v1'}\nrubric: Be brief.\n")
    assert load_setup(other).setup_hash() != setup.setup_hash()  # the rubric is pinned
    path.write_text("model: {name: m}\nreads: []\n")
    with pytest.raises(ConfigError) as err:
        load_setup(path)
    assert "j.yaml:2" in str(err.value) and "'reads'" in str(err.value)
    path.write_text("api: chat\n")
    with pytest.raises(ConfigError, match="'model'"):
        load_setup(path)


def test_the_interval_unit_follows_the_suites_cluster_key() -> None:
    trials = [_trial(1, "x", "t0", 0), _trial(2, "x", "t1", 0), _trial(3, "x", "t2", 0)]
    trials[2].cluster = ""  # no cluster: the task is its own
    by_cluster = Run.model_construct(config={"suite": {"report": {"cluster_key": "cluster"}}})
    by_task = Run.model_construct(config={"suite": {"report": {"cluster_key": "task"}}})
    assert clusters_of(by_cluster, trials) == {"t0": "c", "t1": "c", "t2": "t2"}
    assert clusters_of(by_task, trials) == {"t0": "t0", "t1": "t1", "t2": "t2"}
    assert clusters_of(Run.model_construct(config=None), trials)["t0"] == "c"
