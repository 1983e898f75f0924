"""The README and docs/ say what the code does: the README's first suite runs exactly as
written, every page in docs/ is linked from the README, every relative link resolves, and
the reference pages' YAML examples are valid files of their kind (unknown keys are errors)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from harness.config.models import EnvironmentSpec, Suite, TaskFile
from tests.cli.test_usage_errors import _main
from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
_FILE_BLOCK = re.compile(r"^`([^`]+)`[^\n]*:\n\n```(?:yaml)?\n(.*?)```", re.S | re.M)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _first_suite(dest: Path) -> Path:
    section = _section(README.read_text(), "A first suite of your own")
    files = _FILE_BLOCK.findall(section)
    assert {name for name, _ in files} >= {"suite.yaml", "tasks.yaml"}, files
    for name, body in files:
        path = dest / "my-evals" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return dest / "my-evals" / "suite.yaml"


def test_the_readme_first_suite_validates_runs_and_compares(tmp_path):
    suite = _first_suite(tmp_path)
    store = f"sqlite:///{tmp_path / 'h.db'}"
    code, out, err = _main("validate", str(suite), "-q")
    assert code == 0, out + err
    code, out, err = _main("run", str(suite), "--store", store, "-q")
    assert code == 0, out + err
    code, out, err = _main("compare", "latest", "--store", store, "--json")
    assert code == 0, out + err
    result = json.loads(out)
    assert result["estimate"] == 1.0  # the reference passes everything, the floor nothing
    assert (result["n"], result["unit"]) == (2, "task")


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_every_docs_page_is_linked_from_the_readme():
    linked = {m for m in _LINK.findall(README.read_text()) if m.startswith("docs/")}
    missing = [p.name for p in _pages() if f"docs/{p.name}" not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


@pytest.mark.parametrize("page", [README, *_pages()], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    broken = [
        target
        for target in _LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken, f"{page.name}: links to missing files {broken}"


def _yaml_blocks(page: str) -> list[object]:
    text = (DOCS / page).read_text()
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_the_suite_reference_example_is_a_valid_suite():
    block = _yaml_blocks("suite.md")[0]
    assert isinstance(block, dict)
    Suite.model_validate(block)


def test_the_task_reference_examples_are_valid_tasks():
    blocks = _yaml_blocks("tasks.md")
    assert isinstance(blocks[0], dict)
    TaskFile.model_validate(blocks[0])


def test_the_environment_reference_example_is_a_valid_environment():
    block = _yaml_blocks("environments.md")[0]
    assert isinstance(block, dict)
    EnvironmentSpec.model_validate(block)
