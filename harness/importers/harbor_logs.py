"""Harbor's ``/logs`` directories in the agent's image.

Harbor mounts ``/logs/agent``, ``/logs/verifier`` and ``/logs/artifacts`` into the agent's
container, writable by the agent: tasks write their artifacts to ``/logs/artifacts`` (what a
separate verifier is given) and check that ``/logs/verifier`` exists. The harness mounts
nothing there, so the import adds them to the image it builds: a ``COPY`` at the end of the
copied ``Dockerfile`` of a directory written beside it (``COPY`` makes them root's whatever
the image's ``USER``, keeping their mode: world-writable and sticky, like ``/tmp``). The
directory ``/logs`` is then one writable place of the image, so the trial's disk quota holds
there too. Nothing the agent leaves in ``/logs/verifier`` counts: the grader makes it afresh,
its own, before the tests run (``harbor.TEST_COMMAND``).
"""

from __future__ import annotations

import os
from pathlib import Path

CONTEXT = ".harness-harbor-logs"
"""The build-context directory holding ``logs/`` (copied to the image's root)."""
DIRS = ("agent", "verifier", "artifacts")


def add_log_dirs(env_dir: Path) -> None:
    """Make the image built from ``env_dir`` (a copy of a task's ``environment/``) hold
    Harbor's ``/logs`` directories."""
    root = env_dir / CONTEXT / "logs"
    for name in DIRS:
        (root / name).mkdir(parents=True, exist_ok=True)
    for path in (root, *(root / name for name in DIRS)):
        os.chmod(path, 0o1777)
    dockerfile = env_dir / "Dockerfile"
    text = dockerfile.read_text()
    dockerfile.write_text(
        text.rstrip("\n")
        + "\n\n# Added by `harness import harbor`: the /logs directories Harbor mounts for the "
        + f"agent.\nCOPY {CONTEXT}/ /\n"
    )
    ignore = env_dir / ".dockerignore"
    if ignore.is_file():  # never left out of the build context
        ignore.write_text(ignore.read_text().rstrip("\n") + f"\n!{CONTEXT}\n!{CONTEXT}/**\n")


__all__ = ["CONTEXT", "add_log_dirs"]
