"""What the import adds to the end of the agent's image's copied ``Dockerfile``: Harbor's
``/logs`` directories and the ``[environment.env]`` variables.

Harbor mounts ``/logs/agent``, ``/logs/verifier`` and ``/logs/artifacts`` into the agent's
container, writable by the agent: tasks write their artifacts to ``/logs/artifacts`` (what a
separate verifier is given) and check that ``/logs/verifier`` exists. The harness mounts
nothing there, so the import adds them to the image it builds: a ``COPY`` of a directory
written beside the ``Dockerfile`` (``COPY`` makes them root's whatever the image's ``USER``,
keeping their mode: world-writable and sticky, like ``/tmp``). The directory ``/logs`` is
then one writable place of the image, so the trial's disk quota holds there too. Nothing
the agent leaves in ``/logs/verifier`` counts: the grader makes it afresh, its own, before
the tests run (``harbor.TEST_COMMAND``).

``[environment.env]`` is the container's environment in Harbor (its entrypoint's and every
command's, a sidecar's never): here ``ENV`` lines, so the agent's sandbox and a grading
sandbox from the same image have it. Only literal values: a ``${VAR}`` of the host would be
baked into an image layer, so it is refused, as is a prebuilt ``docker_image`` (nothing is
built).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

CONTEXT = ".harness-harbor-logs"
"""The build-context directory holding ``logs/`` (copied to the image's root)."""
DIRS = ("agent", "verifier", "artifacts")


def env_refusal(env: object, prebuilt: bool, table: str = "environment.env") -> str | None:
    """Why ``[environment.env]`` (or the env table ``table``) cannot be given as literal
    variables, or None."""
    if not isinstance(env, dict) or not env:
        return None
    if prebuilt:
        return "environment variables of a prebuilt image ([environment.env] with docker_image)"
    for key, value in env.items():
        where = f"{table}.{key}"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            return f"a variable name ({where}: not a name)"
        if isinstance(value, dict | list) or value is None:
            return f"a literal value ({where}: not a string or number)"
        if "${" in str(value) or "\n" in str(value):
            return f"a literal value ({where}: a host variable or a newline)"
    return None


def add_env(env_dir: Path, env: dict) -> None:
    """``ENV`` lines for ``env`` (checked by ``env_refusal``) at the end of the
    ``Dockerfile``; ``$`` kept literal."""

    def literal(value: object) -> str:
        return json.dumps(_text(value)).replace("$", "\\$")

    lines = "".join(f"ENV {key}={literal(value)}\n" for key, value in env.items())
    dockerfile = env_dir / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().rstrip("\n")
        + "\n\n# Added by `harness import harbor`: [environment.env].\n"
        + lines
    )


ENV_FILE = ".harbor-env"
"""In a step's hidden material: its ``[steps.verifier.env]``, read before its tests run."""


def write_env_file(hidden: Path, env: dict) -> None:
    """The verifier's variables as ``export`` lines in ``hidden/ENV_FILE`` (literal values,
    checked by ``env_refusal``)."""
    lines = "".join(f"export {key}={shlex.quote(_text(value))}\n" for key, value in env.items())
    (hidden / ENV_FILE).write_text(lines)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


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


__all__ = [
    "CONTEXT",
    "ENV_FILE",
    "add_env",
    "add_log_dirs",
    "env_refusal",
    "write_env_file",
]
