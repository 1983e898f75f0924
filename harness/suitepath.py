"""`module:Class` names in a suite resolve from the suite file's folder.

An agent or grader written next to the suite (``my_agent.py`` beside ``suite.yaml``,
named ``my_agent:MyAgent``) imports without PYTHONPATH. The folder is appended to
``sys.path``, so it never shadows the harness's own modules or installed packages.
"""

from __future__ import annotations

import sys
from pathlib import Path


def import_beside(suite_file: str | Path) -> None:
    """Make modules in ``suite_file``'s folder importable (idempotent)."""
    folder = str(Path(suite_file).resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
