"""End of the agent's turn in a Docker sandbox: kill everything it left running, and tell
from the daemon's evidence whether a dead container was the agent's doing.

**Sweep.** Containers run Docker's init (PID 1) with ``sleep infinity`` as its first child.
The sweep script keeps PID 1, that child (the child of PID 1 that started first: nothing the
agent starts can be older), itself and its parent (the exec's ``timeout`` wrapper), and SIGKILLs every other process, in rounds, until
none is left. Containers have no capabilities (no ``CAP_KILL``, and ``no-new-privileges``
forbids a privileged exec), so a process can only signal processes of its own uid: the
sweep runs first as the container's user, then once as each other uid it still sees running
(an agent may run commands as any uid through ``exec(user=...)``). When the sweep cannot
even start (a fork bomb holds every pid of the limit) or processes survive it, the container
is killed and started again (its file system is kept, every process is gone). It runs
before the final state is read and before any hidden material is copied in.

**Death evidence.** When a command fails because its container stopped, the daemon says
why: ``OOMKilled`` (the agent exhausted the memory limit: its failure), a ``kill``/``stop``
event sent through the daemon's API by someone other than the harness (from outside:
infrastructure), the container gone (removed under the trial: infrastructure), or the
container exiting on its own while the daemon is healthy (the agent killed its own init
process, or left it nothing to start again with after the harness's own restart: its
failure). The harness's own kills (the restart after a failed sweep) are remembered by time
and never count as a fault from outside.
"""

from __future__ import annotations

import time
from datetime import UTC
from typing import Any

SCRIPT = r"""
self=$$ keep= min=
for d in /proc/[0-9]*; do
  read -r s < "$d/stat" 2>/dev/null || continue
  s=${s##*) }; read -r -a f <<<"$s"
  [ "${f[1]}" = 1 ] || continue
  if [ -z "$min" ] || [ "${f[19]}" -lt "$min" ]; then min=${f[19]} keep=${d#/proc/}; fi
done
n=0
for round in 1 2 3 4 5 6 7 8; do
  hit=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case $p in 1|"$self"|"$PPID"|"$keep") continue ;; esac
    read -r s < "$d/stat" 2>/dev/null || continue
    s=${s##*) }; [ "${s%% *}" = Z ] && continue  # dead, waiting for init to reap it
    kill -9 "$p" 2>/dev/null && { n=$((n+1)); hit=1; }
  done
  [ "$hit" = 0 ] && break
done
uids=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  case $p in 1|"$self"|"$PPID"|"$keep") continue ;; esac
  st= u=
  while read -r k v _; do case $k in State:) st=$v ;; Uid:) u=$v ;; esac; done < "$d/status" 2>/dev/null
  [ -n "$u" ] && [ "$st" != Z ] && uids="$uids $u"
done
echo "$n${uids}"
"""


def _parse(result: Any) -> tuple[int, set[str]]:
    from harness.errors import SandboxError

    parts = result.stdout.split()
    if not result.ok or not parts or not parts[0].isdigit():
        raise SandboxError(
            f"the process sweep did not run (exit {result.exit_code}): "
            f"{(result.stderr or result.stdout).strip()[-200:]}"
        )
    return int(parts[0]), set(parts[1:])


async def sweep(sandbox: Any) -> int:
    """Kill every process in ``sandbox`` but its init and keeper; return the signals sent.

    Raises ``SandboxError`` when processes survive (the trial cannot be graded safely)."""
    from harness.errors import SandboxError

    sent, uids = _parse(await sandbox.exec(SCRIPT, timeout=60))
    for uid in sorted(uids):
        more, _ = _parse(await sandbox.exec(SCRIPT, timeout=60, user=uid))
        sent += more
    if uids:
        more, left = _parse(await sandbox.exec(SCRIPT, timeout=60))
        sent += more
        if left:
            raise SandboxError(f"sandbox {sandbox.id[:12]}: processes of uids {left} survive")
    return sent


OWN_KILL_SLACK_S = 2.0
"""Seconds around one of the harness's own kills in which a kill event is taken as that
kill (the daemon stamps events to the second)."""


def death_cause(
    api: Any, container_id: str, own_kills: list[tuple[float, float]] | None = None
) -> str | None:
    """Why a container stopped, when it was from inside (the agent's doing): a reason
    string; None when it was killed or removed from outside, or the daemon cannot tell.
    ``own_kills`` are the (start, end) wall-clock times of the harness's own kills."""
    import docker.errors

    try:
        api.ping()
        info = api.inspect_container(container_id)
    except docker.errors.NotFound:
        return None  # removed under the trial
    except Exception:
        return None  # the daemon does not answer: infrastructure
    state = info.get("State") or {}
    if state.get("Running"):
        return None
    if state.get("OOMKilled"):
        return "oom: the sandbox ran out of its memory limit"
    created = info.get("Created", "")
    try:
        from datetime import datetime

        stamp = datetime.fromisoformat(created[:26].rstrip("Z")).replace(tzinfo=UTC)
        since = int(stamp.timestamp()) - 1
    except ValueError:
        since = int(time.time()) - 3600
    try:
        events = list(
            api.events(
                since=since,
                until=int(time.time()) + 1,
                filters={"container": container_id, "event": ["kill", "stop"]},
                decode=True,
            )
        )
    except Exception:
        return None
    own = own_kills or []

    def ours(event: dict) -> bool:
        nano = event.get("timeNano")
        at = nano / 1e9 if isinstance(nano, int) else float(event.get("time") or 0)
        return any(a - OWN_KILL_SLACK_S <= at <= b + OWN_KILL_SLACK_S for a, b in own)

    if any(not ours(e) for e in events):
        return None  # a kill or stop through the daemon's API, not the harness's: from outside
    return (
        f"killed_own_sandbox: the container's init exited on its own "
        f"(exit code {state.get('ExitCode')}) while the daemon was healthy"
    )
