"""Every table the CLI prints is readable at 80 columns when piped: no cell cut to '…', no
line wider than 80, the identifying values whole (columns are dropped by priority, with a
note, rather than every cell cut)."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_usage_errors import _main
from tests.conftest import REPO

DEMO = REPO / "tasks" / "demo" / "suite.yaml"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('narrow')}/h.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "80")
        code, out, err = _main("run", str(DEMO), "--trials", "1", "--store", url, "-q")
    assert code == 0, err
    run_id = json.loads(_main("runs", "--json", "--store", url)[1])[0]["id"]
    return url, run_id, out


COMMANDS = [
    ["report"],
    ["runs"],
    ["history", "demo"],
    ["compare", "latest"],
    ["gate", "latest"],
    ["plan", "--run", "latest"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_table_readable_at_80_columns(argv, store, monkeypatch):
    url, run_id, _ = store
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = _main(*argv, "--store", url)
    assert code in (0, 10, 11), err
    _readable(out)
    assert run_id in out or argv[0] in ("compare", "plan")
    if argv[0] in ("compare", "gate"):
        assert "arithmetic" in out and "counting" in out  # class names whole


def test_run_summary_readable_at_80_columns(store):
    _readable(store[2])
    assert "candidate" in store[2] and "unresolved trials (no verdict)" in store[2]


def _readable(text: str) -> None:
    assert "…" not in text, text
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, wide
    # rich crops a table wider than the terminal: its right border would be missing
    cropped = [
        line
        for line in text.splitlines()
        if line[:1] in "┏┃┡│└" and line.rstrip()[-1:] not in "┓┃┩│┘"
    ]
    assert not cropped, cropped
