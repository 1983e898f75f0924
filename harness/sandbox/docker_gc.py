"""Owner labels on harness containers, and the garbage collector of leftovers.

Every container the Docker backend creates carries ``harness=1`` and owner labels:
``harness.host`` (this machine's hostname), ``harness.pid`` (the orchestrator's PID),
``harness.pid_start`` (that process's start time in clock ticks, from /proc, so a recycled
PID is not mistaken for the owner) and ``harness.uid`` (the user the orchestrator ran as).

**The gc rule.** A ``harness=1`` container is a leftover, and is force-removed, when

* its owner process ran on this host as this user and is dead (or is another process by
  now), or
* its owner is on another host, ``running_run_ids`` is given, and its ``harness.run``
  label is missing or not in ``running_run_ids``.

A container whose owner process is alive on this host is never touched, whatever
``running_run_ids`` says: a run that just started may not be in the caller's list yet. Nor
is one another user's process made on this host (a shared machine: their runs are theirs
to collect), nor one on this host without ``harness.uid`` (made by an older harness, owner
unknown): ``harness gc`` counts those and leaves them.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable

log = logging.getLogger(__name__)

HARNESS_LABEL = "harness"
HOST_LABEL = "harness.host"
PID_LABEL = "harness.pid"
PID_START_LABEL = "harness.pid_start"
RUN_LABEL = "harness.run"
UID_LABEL = "harness.uid"


def _pid_start(pid: int) -> str | None:
    """A process's start time (field 22 of /proc/<pid>/stat), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_labels() -> dict[str, str]:
    """The labels naming this process as a container's owner."""
    pid = os.getpid()
    return {
        HOST_LABEL: socket.gethostname(),
        PID_LABEL: str(pid),
        PID_START_LABEL: _pid_start(pid) or "",
        UID_LABEL: str(os.getuid()),
    }


def ours(labels: dict[str, str]) -> bool | None:
    """Made on this host by this user: True/False; None for another host."""
    if labels.get(HOST_LABEL) != socket.gethostname():
        return None
    return labels.get(UID_LABEL) == str(os.getuid())


def owner_alive(labels: dict[str, str]) -> bool | None:
    """True/False when the owner is a process on this host; None when it cannot be told."""
    if labels.get(HOST_LABEL) != socket.gethostname():
        return None
    try:
        pid = int(labels.get(PID_LABEL, ""))
    except ValueError:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = labels.get(PID_START_LABEL)
    return not started or _pid_start(pid) == started


def is_leftover(labels: dict[str, str], running_run_ids: Iterable[str] | None) -> bool:
    """Apply the module's gc rule to one container's labels."""
    mine = ours(labels)
    if mine is False:  # another user's (or an owner older harness versions did not name)
        return False
    alive = owner_alive(labels)
    if alive is not None:
        return not alive
    if running_run_ids is None:
        return False
    return labels.get(RUN_LABEL) not in set(running_run_ids)


def gc(client=None, running_run_ids: Iterable[str] | None = None) -> list[str]:
    """Force-remove leftover harness containers (see the module doc for the rule).

    ``client``: a ``docker.DockerClient`` (default: from the environment).
    ``running_run_ids``: ids of runs still alive anywhere, when the caller knows them.
    Returns the ids of the removed containers.
    """
    import docker.errors

    import docker

    own = client is None
    client = client or docker.from_env()
    run_ids = None if running_run_ids is None else set(running_run_ids)
    removed: list[str] = []
    try:
        containers = client.api.containers(all=True, filters={"label": f"{HARNESS_LABEL}=1"})
        for c in containers:
            labels = c.get("Labels") or {}
            if not is_leftover(labels, run_ids):
                continue
            try:
                client.api.remove_container(c["Id"], force=True, v=True)
                removed.append(c["Id"])
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                log.warning("gc: could not remove container %s: %s", c["Id"][:12], exc)
        _gc_networks(client)
        _gc_volumes(client)
    finally:
        if own:
            client.close()
    if removed:
        log.info("gc: removed %d leftover harness container(s)", len(removed))
    return removed


def _gc_networks(client) -> None:
    """Remove harness networks (egress allowlists and their iptables rules, open-egress
    bridges) whose owner is dead."""
    from harness.sandbox.docker_network import remove_rules_for

    for net in client.networks.list(filters={"label": f"{HARNESS_LABEL}=1"}):
        labels = net.attrs.get("Labels") or {}
        if ours(labels) is not True or owner_alive(labels) is not False:
            continue
        bridge = (net.attrs.get("Options") or {}).get("com.docker.network.bridge.name", "")
        try:
            net.remove()
        except Exception as exc:  # still has containers: the next gc gets it
            log.warning("gc: could not remove network %s: %s", net.name, exc)
            continue
        if bridge:
            remove_rules_for(bridge)


def _gc_volumes(client) -> None:
    """Remove the shared volumes of trials' services (``docker_services``) whose owner is
    dead."""
    for volume in client.volumes.list(filters={"label": f"{HARNESS_LABEL}=1"}):
        labels = volume.attrs.get("Labels") or {}
        if ours(labels) is not True or owner_alive(labels) is not False:
            continue
        try:
            volume.remove(force=True)
        except Exception as exc:  # still mounted: the next gc gets it
            log.warning("gc: could not remove volume %s: %s", volume.name, exc)
