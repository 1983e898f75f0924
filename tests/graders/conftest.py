"""Grader tests. Shared helpers (loading task files with ``yaml.safe_load`` +
``Task.model_validate``, running one real trial in a LocalSandbox) live in
``graders_support``, which the test modules import."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# Tools run as ``python3`` on the host's PATH; put this interpreter's own bin dir first so
# a version-manager shim (pyenv adds ~0.1 s per call) is not on every tool call.
_BIN = str(Path(sys.executable).resolve().parent)
if (Path(_BIN) / "python3").exists() and not os.environ.get("PATH", "").startswith(_BIN):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")
