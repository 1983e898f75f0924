"""How one command runs in a container: its argv (stdin packed in, a time limit inside the
container) and its output, read as it comes within a cap.

Kept apart from ``docker_container`` (the container's whole life) because these are the
two places a command's bytes cross the Docker API.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from harness.sandbox.output import Capture

STDIN_ENV = "HARNESS_STDIN_B64"
STDIN_ENV_MAX = 96 * 1024
"""Bytes of base64 stdin passed in an environment variable (one env string may hold 128 KiB
on Linux); longer stdin goes through a file."""


def command_argv(
    cmd: str, stdin: str | bytes | None, timeout: float | None
) -> tuple[list[str], dict[str, str], tuple[str, bytes] | None]:
    """``bash -c cmd`` with ``stdin`` fed to it and ``timeout -s KILL`` around it (which
    kills the command's whole process group). Returns the argv, the environment variables
    to add, and a file to write into the container first (path, bytes) when stdin is too
    long for a variable."""
    env: dict[str, str] = {}
    argv = ["bash", "-c", cmd]
    upload: tuple[str, bytes] | None = None
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        encoded = base64.b64encode(data).decode()
        if len(encoded) <= STDIN_ENV_MAX:
            # No extra API call: stdin travels base64-encoded in an env var that is unset
            # before the command runs.
            env[STDIN_ENV] = encoded
            script = f'printf %s "${STDIN_ENV}" | base64 -d | {{ unset {STDIN_ENV}; exec bash -c "$1"; }}'
            argv = ["bash", "-c", script, "harness-stdin", cmd]
        else:
            path = f"/tmp/.harness-stdin-{uuid.uuid4().hex}"
            upload = (path, data)
            script = 'exec 0<"$2"; rm -f "$2" 2>/dev/null; exec bash -c "$1"'
            argv = ["bash", "-c", script, "harness-stdin", cmd, path]
    if timeout is not None:
        argv = ["timeout", "-s", "KILL", f"{max(timeout, 0.001):g}", *argv]
    return argv, env, upload


def read_output(api: Any, exec_id: str, limit: int) -> tuple[int | None, Capture, Capture]:
    """Blocking: start the exec and read its output as it comes, keeping at most ``limit``
    bytes of each stream (``Capture``): a command printing gigabytes costs the harness no
    more memory than one printing ``limit``. Returns the exit code and both streams.

    Raises ``ValueError`` when docker-py read payload bytes as a frame header ("48 is not a
    valid stream", docker/docker-py#3160; seen under load)."""
    out, err = Capture(limit), Capture(limit)
    stream = api.exec_start(exec_id, stream=True, demux=True)
    try:
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.add(chunk_out)
            if chunk_err:
                err.add(chunk_err)
    finally:
        stream.close()
    return api.exec_inspect(exec_id)["ExitCode"], out, err


__all__ = ["STDIN_ENV", "STDIN_ENV_MAX", "command_argv", "read_output"]
