"""Fuzzed suite and task files: always a one-line error naming the file (and field), never a
traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.resolve import load as load_suite

SUITE_KEYS = [
    "name",
    "description",
    "seed",
    "trials",
    "tasks",
    "arms",
    "concurrency",
    "sandbox",
    "budgets",
    "retries",
    "limits",
    "store",
    "report",
    "variants",
    "denominator",
    "gate",
    "environments_dir",
    "sandbox_options",
    "bogus",
    "trails",
]
TASK_KEYS = [
    "id",
    "instruction",
    "environment",
    "class",
    "cluster",
    "stratum",
    "weight",
    "graders",
    "solution",
    "budgets",
    "hidden",
    "variants",
    "simulated",
    "user",
    "setup",
    "must_never",
    "nonsense",
]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _mapping(keys: list[str]):
    return st.dictionaries(st.sampled_from(keys), values, max_size=len(keys))


GOOD_SUITE = {
    "name": "s",
    "tasks": ["tasks.yaml"],
    "arms": [{"name": "a", "agent": "noop"}],
    "sandbox": "local",
}
GOOD_TASK = {"id": "t", "instruction": "x", "graders": [{"type": "answer_match", "expected": "1"}]}


def _check(suite: object, tasks: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "suite.yaml").write_text(yaml.safe_dump(suite))
        (root / "tasks.yaml").write_text(yaml.safe_dump(tasks))
        try:
            load_suite(root / "suite.yaml")
        except ConfigError as exc:
            message = str(exc)
            assert "\n" not in message
            assert exc.file.endswith(("suite.yaml", "tasks.yaml")) or "environment" in message
            structural = ("expected a mapping", "file not found", "invalid YAML")
            assert exc.field or any(s in message for s in structural), message


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mapping(SUITE_KEYS))
def test_fuzzed_suite_fields(changes):
    _check({**GOOD_SUITE, **changes}, {"tasks": [GOOD_TASK]})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mapping(TASK_KEYS))
def test_fuzzed_task_fields(changes):
    _check(GOOD_SUITE, {"tasks": [{**GOOD_TASK, **changes}]})


@settings(max_examples=40, deadline=None)
@given(values, values)
def test_fuzzed_whole_documents(suite, tasks):
    _check(suite, tasks)


def test_a_key_with_a_line_break_still_gives_one_line():
    """Found by the fuzzer: an unknown key holding a newline broke the one-line error."""
    _check({**GOOD_SUITE, "bo\ngus": 1}, {"tasks": [GOOD_TASK]})
    _check(GOOD_SUITE, {"tasks": [{**GOOD_TASK, "x\r\ny": "z"}]})
