"""The only host paths a trial's container sees: the metering proxy's socket directory
(read-only, when the trial's arm asks) and the places of its disk quota (``docker_quota``).
Nothing else of the host is ever mounted."""

from __future__ import annotations

from typing import Any

from harness.sandbox.base import SOCKET_MOUNT, SandboxRequest
from harness.sandbox.docker_quota import TrialDisk


def host_mounts(request: SandboxRequest, disk: TrialDisk | None) -> dict[str, Any]:
    """``create_host_config`` arguments: ``mounts`` (the proxy's socket) and ``binds``."""
    from docker.types import Mount

    sockets = None
    if request.socket_dir is not None:
        sockets = [Mount(SOCKET_MOUNT, request.socket_dir, type="bind", read_only=True)]
    return {"mounts": sockets, "binds": disk.binds() if disk is not None else None}


__all__ = ["host_mounts"]
