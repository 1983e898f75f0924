"""A running container's network, phase by phase: the agent's turn, then (a task graded in
place) its grading, then the next step's turn, each with its own policy.

Each policy's network is the provider's (``DockerProvider._network_for``: none, an allowlist
bridge with its iptables rules, the run's open-egress bridge), made once, so a switch goes
through the same code, and the same enforcement, as a new container's network. A switch
disconnects the container from the network it leaves before connecting it to the next one:
two policies are never open at once, and a switch that fails half way leaves the container
on no network. ``back`` goes to the network of the agent's last phase, which the container
does before its commands are the agent's again (``DockerSandbox.end_grading``): a network
opened for the grader is closed before any agent process can run. A network the container
has besides the policy's (its services', ``docker_services``) stays. Failures raise
``SandboxError``: the trial ends as infrastructure, never on a network it should not have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import SandboxError
from harness.sandbox.docker_calls import DaemonCalls, DaemonTimeout, docker_errors

NetworkFor = Callable[[list[str], bool], Awaitable[str]]
"""(hosts, open egress) -> the network's name, or ``none`` (the provider's, for one
environment)."""


@dataclass
class PhaseNetwork:
    """The policy network of one agent's container, and the agent's own."""

    container: str
    api: Any
    calls: DaemonCalls
    network_for: NetworkFor
    current: str
    """``none``, a network's name, or '' while detached (a switch failed half way)."""
    bare: bool
    """``none`` is Docker's none network (no services network for the container to stay on)."""
    agents: str = ""
    """The network of the agent's last phase (``back`` returns to it)."""

    def __post_init__(self) -> None:
        self.agents = self.agents or self.current

    async def switch(self, hosts: list[str], internet: bool, agents: bool) -> None:
        """To the network of (``hosts``, open egress ``internet``); ``agents``: it is the
        agent's phase (the network ``back`` returns to)."""
        target = await self.network_for(hosts, internet)
        if agents:
            self.agents = target
        await self._to(target)

    async def back(self) -> None:
        """The network of the agent's last phase again (after grading in place)."""
        await self._to(self.agents)

    async def _to(self, target: str) -> None:
        if target == self.current:
            return
        try:
            await self.calls("network", self._swap, target, container=self.container)
        except (DaemonTimeout, *docker_errors()) as exc:
            raise SandboxError(
                f"sandbox {self.container[:12]}: switching its network from "
                f"{self.current or 'none'} to {target} failed: {exc}"
            ) from exc

    def _swap(self, target: str) -> None:
        leaving = self.current
        if leaving and (leaving != "none" or self.bare):
            self.api.disconnect_container_from_network(self.container, leaving)
        self.current = ""
        if target != "none" or self.bare:
            self.api.connect_container_to_network(self.container, target)
        self.current = target


__all__ = ["NetworkFor", "PhaseNetwork"]
