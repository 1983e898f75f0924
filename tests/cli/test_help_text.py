"""Every command's --help is written for users: no code comments or reStructuredText, no
Python types as metavars, the sandbox backends that exist today, and lines that fit 80
columns. Walks the real command tree, so a command added later is checked too."""

from __future__ import annotations

import re

import pytest
import typer.main

from harness.cli import app
from harness.commands.options import SANDBOXES
from tests.cli.test_usage_errors import _main


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and sub-command, as the words that invoke it (() is `harness`)."""
    out: list[tuple[str, ...]] = []

    def walk(cmd, path: tuple[str, ...]) -> None:
        out.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return out


CODE_TALK = re.compile(r"long because|# long|noqa|``|:func:|:class:|TODO|typer", re.I)
PYTHON_TYPES = re.compile(
    r"<(str|int|float|bool|path|list\[[^\]]*\])>|\b(TEXT|INTEGER|FLOAT|BOOLEAN|PATH RANGE)\b"
)


def _registered_backends() -> list[str]:
    from harness.sandbox import BACKENDS

    return [n for n in BACKENDS if n != "local"]  # `local`: old name, warns


def test_the_tree_is_walked():
    paths = {" ".join(p) for p in _command_paths()}
    assert {"", "run", "report", "gate", "agents stage", "import harbor", "view"} <= paths


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "harness")
def test_help_is_written_for_users(path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = _main(*path, "--help")
    assert code == 0 and "Usage:" in out, err
    assert not CODE_TALK.search(out), CODE_TALK.search(out)
    assert not PYTHON_TYPES.search(out), PYTHON_TYPES.search(out)
    summary = out.split("\n\n", 2)[1].strip()
    assert summary and summary[0].isupper() and summary.endswith((".", ")")), summary
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    if "--sandbox" in out:
        section = out[out.index("--sandbox") :].split("\n  -", 1)[0]
        for name in _registered_backends():
            assert name in section, (name, section)
        assert not re.search(r"(?<!unsafe-)\blocal\b(?! \()", section), section


def test_shared_sandbox_help_names_every_backend_and_no_old_one():
    for name in _registered_backends():
        assert name in SANDBOXES
    assert not re.search(r"(?<!unsafe-)\blocal\b", SANDBOXES)
