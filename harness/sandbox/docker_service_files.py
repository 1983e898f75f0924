"""Files a grading sandbox gets from the services beside the agent's container (a task's
``grading.services``: Harbor's artifacts of a sidecar and its ``[[verifier.collect]]``).

They are taken after the agent's container is stopped and before the services are removed
with it: each service's ``collect`` commands run in it first (``sh -c``, as the service's own
user: its image may have no bash), then its ``paths`` leave it as data through the daemon's
archive API, appended to the agent's work product under their absolute names. The grading
sandbox gets them like the agent's files (owned by the agent's user, no setuid bits, links
confined: ``harness.grading``) and never reaches the service itself. A collect command that
fails or outlives its limit is logged and grading goes on: the tests see what is missing;
a service that stopped during the agent's turn is the agent's ``broke_environment``.
"""

from __future__ import annotations

import logging
import posixpath
import tarfile
from typing import TYPE_CHECKING

from harness.errors import AgentFailure, SandboxError
from harness.sandbox import docker_archive, docker_exec
from harness.sandbox.docker_calls import DaemonTimeout, docker_errors
from harness.sandbox.docker_container import DockerSandbox

if TYPE_CHECKING:
    from harness.config.task_parts import ServiceFiles
    from harness.sandbox.workproduct import WorkProduct

log = logging.getLogger(__name__)
COLLECT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of each collect command's output kept (shown in the log when it fails)."""


class ServicedSandbox(DockerSandbox):
    """The agent's container of an attempt with services: it can take their files out."""

    services: dict[str, str]
    """service name -> its container (the attempt's ``TrialServices.names``)"""

    async def export_services(self, wanted: dict[str, ServiceFiles], product: WorkProduct) -> None:
        for name, files in wanted.items():
            cid = self.services[name]
            if files.collect:
                await self._running_after_the_agent(name, cid)
            for command in files.collect:
                await self._collect(name, cid, command, files.timeout_s)
            try:
                await self._daemon.calls(
                    "files", _append, self._api, cid, files.paths, product, container=cid
                )
            except docker_errors() as exc:
                raise SandboxError(f"service '{name}': taking {files.paths} out: {exc}") from exc

    async def _running_after_the_agent(self, name: str, cid: str) -> None:
        """It was healthy when the agent started and only the agent talked to it: a
        service that stopped during the agent's turn is the agent's doing."""
        try:
            state = (await self._daemon.calls("inspect", self._api.inspect_container, cid))["State"]
        except docker_errors() as exc:
            raise SandboxError(f"service '{name}': inspecting it failed: {exc}") from exc
        if not state.get("Running"):
            raise AgentFailure(
                "broke_environment",
                f"service '{name}' exited (status {state.get('ExitCode')}) during the "
                "agent's turn; its collect commands cannot run",
            )

    async def _collect(self, name: str, cid: str, command: str, timeout: float) -> None:
        try:
            exec_id = await self._daemon.calls(
                "exec",
                lambda: self._api.exec_create(cid, ["sh", "-c", command])["Id"],
                container=cid,
            )
            code, out, err = await self._daemon.calls(
                "exec",
                docker_exec.read_output,
                self._api,
                exec_id,
                COLLECT_OUTPUT_LIMIT,
                container=cid,
                limit=timeout,
                late_is_stuck=False,
            )
        except DaemonTimeout:
            log.warning("service '%s': collect command still running after %gs", name, timeout)
            return
        except docker_errors() as exc:
            raise SandboxError(f"service '{name}': collect command failed: {exc}") from exc
        if code != 0:
            said = (err.value() or out.value())[-300:].decode(errors="replace").strip()
            log.warning("service '%s': collect command exited %s: %s", name, code, said)


def _append(api, cid: str, paths: list[str], product: WorkProduct) -> None:
    """Blocking: ``paths`` of container ``cid`` appended to the product's archive."""
    import docker.errors

    with tarfile.open(product.path, mode="a", format=tarfile.PAX_FORMAT) as tar:
        for path in paths:
            target = posixpath.normpath(path)
            product.roots.append(target)
            try:
                stream, _stat = api.get_archive(cid, target)
            except docker.errors.NotFound:
                api.inspect_container(cid)  # NotFound: the service is gone
                product.missing.append(target)
                continue
            docker_archive.copy_renamed(stream, tar, posixpath.basename(target), target.lstrip("/"))


__all__ = ["ServicedSandbox"]
