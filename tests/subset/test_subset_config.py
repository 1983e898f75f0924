"""The declared subset: drawn once, seeded, the same for every arm, stored and hashed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.anchors.fits import choose
from harness.config.loader import load_suite
from harness.config.subset import Subset, allocate, draw
from harness.errors import ConfigError
from tests.conftest import write_suite
from tests.subset.helpers import subset_tasks


def _load(tmp_path: Path, subset: object, n: int = 20, **flags: object):  # type: ignore[no-untyped-def]
    suite = write_suite(tmp_path, task_list=subset_tasks(n), subset=subset)
    return load_suite(suite, flags or None)


def test_a_random_subset_is_seeded_stored_and_hashed(tmp_path: Path) -> None:
    one = _load(tmp_path / "a", {"method": "random", "n": 5})
    again = _load(tmp_path / "b", {"method": "random", "n": 5})
    other = _load(tmp_path / "c", {"method": "random", "n": 5, "seed": 7})
    assert len(one.tasks) == 5 and one.subset is not None
    assert [t.task.id for t in one.tasks] == one.subset["tasks"]
    assert len(one.subset["population"]) == 20
    assert one.subset["tasks"] == again.subset["tasks"]  # type: ignore[index]
    assert one.config_hash == again.config_hash
    assert other.subset["tasks"] != one.subset["tasks"]  # type: ignore[index]
    assert other.config_hash != one.config_hash


def test_the_command_lines_form_and_a_fraction(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(20))
    full = load_suite(suite)
    part = load_suite(suite, {"subset": "random:20%"})
    assert full.subset is None and len(full.tasks) == 20
    assert len(part.tasks) == 4 and part.config_hash != full.config_hash
    assert Subset.model_validate("stratified:7").n == 7


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("random", "write METHOD:N or METHOD:P%"),
        ("random:x", "'x' is not a number of tasks"),
        ("best:5", "Input should be 'random', 'stratified', 'anchors' or 'midrange'"),
    ],
)
def test_a_bad_subset_flag_is_one_line_naming_the_flag(
    tmp_path: Path, text: str, message: str
) -> None:
    suite = write_suite(tmp_path, task_list=subset_tasks(6))
    with pytest.raises(ConfigError) as err:
        load_suite(suite, {"subset": text})
    assert err.value.field.startswith("--subset") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_too_many_tasks_and_limit_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="n = 30 tasks but the suite has 20"):
        _load(tmp_path / "a", {"method": "random", "n": 30})
    with pytest.raises(ConfigError, match="takes no --limit"):
        _load(tmp_path / "b", {"method": "random", "n": 3}, limit=2)


def test_stratified_allocation_is_proportional_and_keeps_every_stratum(tmp_path: Path) -> None:
    assert allocate([300, 200], 50) == [30, 20]
    assert allocate([90, 5, 5], 10) == [6, 2, 2]
    assert allocate([90, 1, 9], 4) == [2, 1, 1]
    with pytest.raises(ValueError, match="needs n >= the 3 strata"):
        allocate([5, 5, 5], 2)
    loaded = _load(tmp_path, {"method": "stratified", "n": 9, "by": "class"}, n=30)
    classes = [t.task.class_ for t in loaded.tasks]
    assert classes.count("hard") == 3 and classes.count("easy") == 6


def test_whole_clusters_and_an_anchor_draw() -> None:
    pop = [{"id": f"t{i}", "cls": "x", "cluster": f"c{i // 5}"} for i in range(20)]
    drawn = draw(Subset(method="random", n=2, unit="cluster"), pop, 3)  # type: ignore[arg-type]
    assert len(drawn["tasks"]) == 10
    clusters = {p["cluster"] for p in pop if p["id"] in drawn["tasks"]}
    assert len(clusters) == 2
    fit = {
        "version": "1",
        "a": {p["id"]: 1.0 for p in pop},
        "b": {p["id"]: float(i) - 10 for i, p in enumerate(pop)},
        "pass_rate": {p["id"]: 1 - i / 19 for i, p in enumerate(pop)},
        "recent_theta": [0.0],
    }
    anchors = draw(Subset(method="anchors", n=4), pop, 0, fit, choose)  # type: ignore[arg-type]
    assert sorted(fit["b"][t] for t in anchors["tasks"]) == [-2.0, -1.0, 0.0, 1.0]
    mid = draw(Subset(method="midrange", n=3, band=(0.4, 0.6)), pop, 0, fit, choose)  # type: ignore[arg-type]
    assert all(0.4 <= fit["pass_rate"][t] <= 0.6 for t in mid["tasks"])


def test_an_anchor_subset_without_a_fit_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs the store's fits"):
        _load(tmp_path, {"method": "anchors", "n": 3})
