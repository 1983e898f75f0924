"""Preflight: agents, sandboxes and API keys that cannot work are one line naming file, field
and line, exit 2, before any run row is written (not a run of harness_error trials)."""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from tests.cli.test_usage_errors import _main
from tests.conftest import write_suite

NOT_AGENT = (
    "from harness.agents import Agent\nfrom harness.config.models import Options\n\n"
    "class NotAgent:\n    name = 'x'\n\n    def run(self, ctx):\n        return None\n\n"
    "class P(Options):\n    p: float = 0\n\n"
    "class SyncAgent(Agent):\n    name = 'sync'\n    Params = P\n\n    def run(self, ctx):\n        return None\n"
)


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"arms.0.agent": "no_such_module_xyz:Agent"}, "arms[0].agent", "cannot import"),
        ({"arms.0.agent": "helper:Missing"}, "arms[0].agent", "has no 'Missing'"),
        ({"arms.0.agent": "os:getcwd"}, "arms[0].agent", "not a class"),
        ({"arms.0.agent": "helper:NotAgent"}, "arms[0].agent", "async def run"),
        ({"arms.0.agent": "helper:SyncAgent"}, "arms[0].agent", "is not an agent"),
        ({"arms.0.agent": "nocolon"}, "arms[0].agent", "unknown agent"),
        (
            {"arms.0.model": {"name": "m", "api_key_env": "HARNESS_TEST_UNSET_KEY"}},
            "arms[0].model.api_key_env",
            "HARNESS_TEST_UNSET_KEY",
        ),
        ({"sandbox": "os:getcwd"}, "sandbox", "not a class"),
        ({"sandbox": "no_such_module_xyz:Box"}, "sandbox", "cannot import"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_preflight_refuses_before_any_run_row(change, field, text, tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_UNSET_KEY", raising=False)
    suite = write_suite(tmp_path / "s", n_tasks=2)
    (suite.parent / "helper.py").write_text(NOT_AGENT)
    doc = yaml.safe_load(suite.read_text())
    for path, value in change.items():
        node = doc
        *parts, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for p in parts:
            node = node[p]
        node[last] = value
    suite.write_text(yaml.safe_dump(doc))
    db = tmp_path / "h.db"
    code, _, err = _main("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"field '{field}'" in lines[0] and text in lines[0], err
    assert "suite.yaml:" in lines[0]  # file and line
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


SEALED = (
    "from harness.sandbox.local import LocalProvider\n\n"
    "class Sealed(LocalProvider):\n    name = 'sealed'\n    isolated = True\n"
)
MODEL = {"name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}


@pytest.mark.parametrize(
    "arm",
    [
        {"agent": "codex", "model": MODEL},
        {"agent": "claude-code", "model": {**MODEL, "api": "anthropic"}},
        {"agent": "command", "model": MODEL, "params": {"command": "true", "where": "sandbox"}},
    ],
    ids=["codex", "claude-code", "command-in-sandbox"],
)
def test_an_agent_program_never_runs_unconfined_for_want_of_a_socket(arm, tmp_path):
    """An isolated backend that cannot mount the proxy's socket (nor a CLI) refuses arms
    whose program runs inside the sandbox, naming the arm's agent field and the backend;
    ``unsafe-local`` (nothing isolated) and a program on the host or without model pass."""
    from harness.resolve import load

    suite = write_suite(tmp_path / "s", n_tasks=1)
    (suite.parent / "sealed.py").write_text(SEALED)
    doc = yaml.safe_load(suite.read_text())
    doc["arms"] = [{"name": "ok", "agent": "oracle"}, {"name": "cli", **arm}]
    doc["sandbox"] = "sealed:Sealed"
    suite.write_text(yaml.safe_dump(doc))
    db = tmp_path / "h.db"
    code, _, err = _main("run", str(suite), "--store", f"sqlite:///{db}", "-q")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "suite.yaml:" in lines[0], err
    assert "field 'arms[1].agent'" in lines[0] and "sandbox 'sealed:Sealed'" in lines[0], err
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    doc["sandbox"] = "unsafe-local"
    suite.write_text(yaml.safe_dump(doc))
    load(suite)  # nothing is isolated there: the program runs on the host, as documented
    if arm["agent"] == "command":
        for params in ({"command": "true"}, {"command": "true", "where": "sandbox"}):
            doc.update(sandbox="sealed:Sealed")
            doc["arms"][1] = {"name": "cli", "agent": "command", "params": params}
            if "where" in params:
                doc["arms"][1].pop("model", None)
            else:
                doc["arms"][1]["model"] = MODEL
            suite.write_text(yaml.safe_dump(doc))
            load(suite)  # host program with a model, sandboxed one without: accepted
