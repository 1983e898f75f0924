"""Every malformed config in the corpus is one line naming its file and field, exit 2.

The whole corpus loads in-process (fast); a sample goes through the real CLI. Times are
measured by ``benchmarks/config_corpus.py``, not asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.executors import bind
from harness.resolve import load
from tests.cli.config_corpus import all_cases, write_case
from tests.conftest import run_cli

CASES = all_cases()


def load_suite(path: Path):
    """What `harness run` and `harness validate` check before the store: the suite resolved,
    its executor bound (``harness.preflight``)."""
    resolved = load(path)
    bind(resolved)
    return resolved


def test_corpus_is_large_and_the_base_is_valid(tmp_path):
    assert len(CASES) >= 100
    from tests.cli.config_corpus import Case

    resolved = load_suite(write_case(Case("valid", ""), tmp_path))
    assert [t.task.id for t in resolved.tasks] == ["t1", "t2"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_malformed_config_is_one_named_line(case, tmp_path):
    suite = write_case(case, tmp_path / "suite")
    with pytest.raises(ConfigError) as info:
        load_suite(suite)
    exc = info.value
    text = str(exc)
    assert "\n" not in text, text
    assert Path(exc.file).name == Path(case.file).name, text
    assert case.expect in text, text
    if case.has_line:
        assert exc.line is not None, text


SAMPLE = ["suite-billion-laughs", "task-recursive-anchor", "trials-true", "hidden-symlink-file-out"]


@pytest.mark.parametrize("name", SAMPLE)
def test_cli_sample_exits_2_with_one_line(name, tmp_path):
    case = next(c for c in CASES if c.name == name)
    suite = write_case(case, tmp_path / "suite")
    proc = run_cli("run", str(suite), "--store", f"sqlite:///{tmp_path}/s.db", "-q", timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert not (tmp_path / "s.db").exists() or "runs" not in proc.stdout
