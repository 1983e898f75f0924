"""A canary in the harness's environment, looked for wherever an agent's doing ends up.

The harness runs with ``CANARY_VAR`` set to a fresh random value (``canary.env`` for a CLI
run, ``canary.install(monkeypatch)`` in-process). Nothing an agent can reach should ever hold
it: after a run, ``canary.assert_absent`` searches the command's output and every byte of the
store (the SQLite file and its journal: trial rows, evidence, answers, trajectories, blobs).
Any secret of the harness's environment (an API key) travels the same paths as the canary,
so a canary found is a key leaked.

    def test_x(canary, tmp_path):
        result = run_cli("run", suite, "--store", f"sqlite:///{db}", env=canary.env)
        canary.assert_absent(result.stdout, result.stderr, store=db)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CANARY_VAR = "HARNESS_RED_TEAM_CANARY"


@dataclass
class Canary:
    value: str = field(default_factory=lambda: f"canary-{secrets.token_hex(12)}")

    @property
    def env(self) -> dict[str, str]:
        """The variables a CLI run gets in its environment (on top of the test's)."""
        return {CANARY_VAR: self.value}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Set the canary in this process's environment (in-process runs)."""
        monkeypatch.setenv(CANARY_VAR, self.value)

    def found_in(self, *texts: str | bytes, store: Path | None = None) -> list[str]:
        """Where the canary was found: 'text N' for the texts, file names of the store."""
        needle = self.value.encode()
        where = [
            f"text {i}"
            for i, t in enumerate(texts)
            if needle in (t.encode() if isinstance(t, str) else t)
        ]
        if store is not None:
            for path in sorted(store.parent.glob(store.name + "*")):  # -wal, -journal
                if path.is_file() and needle in path.read_bytes():
                    where.append(path.name)
        return where

    def assert_absent(self, *texts: str | bytes, store: Path | None = None) -> None:
        where = self.found_in(*texts, store=store)
        assert not where, f"the harness's environment leaked (canary found in {where})"


@pytest.fixture
def canary() -> Canary:
    return Canary()


__all__ = ["CANARY_VAR", "Canary", "canary"]
