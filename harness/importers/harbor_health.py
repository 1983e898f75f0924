"""Harbor's container start: the task image's own ``ENTRYPOINT`` and its
``[environment.healthcheck]``, as the environment's ``setup`` commands.

Harbor keeps the entrypoint a task's ``Dockerfile`` declares (a server it starts, say) and,
with a healthcheck, waits until the container is healthy before the agent starts. The
harness starts every sandbox with its own keeper process instead of the image's
entrypoint, so the import turns them into setup commands, run before the agent (and again
in each fresh grading sandbox, before the agent's files are copied in): the entrypoint
started in the background, detached, then the healthcheck polled with Docker's semantics
(failures during ``start_period_sec`` do not count, polled every ``start_interval_sec``;
after it, ``retries`` failures ``interval_sec`` apart make the environment unhealthy, each
try bounded by ``timeout_sec``). An environment that never gets healthy fails its setup:
the task is broken, not the agent. Approximated: they run as the agent's user, not the
image's ``USER``; an entrypoint inherited from the base image is not started.
"""

from __future__ import annotations

import json
import re
import shlex

DEFAULTS = {
    "interval_sec": 30.0,
    "timeout_sec": 30.0,
    "start_period_sec": 0.0,
    "start_interval_sec": 5.0,
    "retries": 3,
}
"""Docker's own defaults for a ``HEALTHCHECK``."""


class Refused(ValueError):
    """A healthcheck the import cannot read; the message names the field."""


def entrypoint(dockerfile: str) -> str | None:
    """The shell command of the last stage's own ``ENTRYPOINT``, or None when it declares
    none (``ENTRYPOINT ["a", "b"]`` runs as it is; the shell form through ``/bin/sh -c``)."""
    text = re.sub(r"\\\n", " ", dockerfile)  # line continuations
    stages = re.split(r"(?im)^\s*FROM\s", text)
    found = re.findall(r"(?im)^\s*ENTRYPOINT\s+(.+?)\s*$", stages[-1])
    if not found:
        return None
    raw = found[-1]
    try:
        argv = json.loads(raw)
    except json.JSONDecodeError:
        argv = None
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        return shlex.join(argv) if argv else None
    return f"/bin/sh -c {shlex.quote(raw)}"


def start_command(entry: str) -> str:
    """Start the entrypoint in the background, detached from the setup command."""
    return f"(setsid nohup {entry} >/dev/null 2>&1 &)"


def wait_command(table: object) -> str:
    """A setup command that polls the healthcheck until it passes; exits 1 (with a line
    naming the command) when the environment is unhealthy. Raises ``Refused``."""
    if not isinstance(table, dict) or not isinstance(table.get("command"), str):
        raise Refused("a readable healthcheck (environment.healthcheck.command: not a string)")
    values = {}
    for key, default in DEFAULTS.items():
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise Refused(f"a readable healthcheck (environment.healthcheck.{key}: {value!r})")
        values[key] = value
    check = shlex.quote(table["command"])
    said = shlex.quote(f"healthcheck {table['command']!r} failed {values['retries']} times")
    return (
        f"end=$((SECONDS+{int(values['start_period_sec'])})); fails=0; while :; do "
        f"timeout {values['timeout_sec']:g} bash -c {check} >/dev/null 2>&1 && exit 0; "
        f"if [ $SECONDS -lt $end ]; then sleep {values['start_interval_sec']:g}; continue; fi; "
        f"fails=$((fails+1)); [ $fails -ge {int(values['retries'])} ] && "
        f"{{ echo {said} >&2; exit 1; }}; sleep {values['interval_sec']:g}; done"
    )


def refusal(healthcheck: object, prebuilt: bool) -> str | None:
    """Why the healthcheck cannot be polled before the agent, or None (none given)."""
    if not isinstance(healthcheck, dict) or not healthcheck:
        return None
    if prebuilt:  # its entrypoint is not known
        return "container healthchecks of a prebuilt image (environment.healthcheck)"
    try:
        wait_command(healthcheck)
    except Refused as exc:
        return str(exc)
    return None


def setup(dockerfile: str | None, healthcheck: object) -> list[str]:
    """The environment's setup commands for Harbor's container start (module doc)."""
    commands = []
    entry = entrypoint(dockerfile) if dockerfile is not None else None
    if entry is not None:
        commands.append(start_command(entry))
    if isinstance(healthcheck, dict) and healthcheck:
        commands.append(wait_command(healthcheck))
    return commands


__all__ = [
    "DEFAULTS",
    "Refused",
    "entrypoint",
    "refusal",
    "setup",
    "start_command",
    "wait_command",
]
