"""Harbor's network settings, per phase, as the harness's network policy (``harness.network``).

Harbor gives a task a baseline network (``[environment] network_mode``: ``public``, the
default, ``no-network`` or ``allowlist`` with ``allowed_hosts``; the older
``allow_internet = false`` means ``no-network``) and lets each phase override it:
``[agent]`` for the agent's turn, ``[verifier]`` for the tests, whose own baseline is
``[verifier.environment]`` when the verifier runs in an environment of its own. Each phase's
policy is its sandbox's (the agent's, then a fresh grading sandbox), or, where a phase runs
in the agent's sandbox (a task graded in place, a step's turn), the policy that sandbox is
switched to for the phase (``harness.network.phases``): ``public`` is open egress
(``internet: true``, which the user must allow with ``--allow-internet``), an allowlist is
``network`` hosts, ``no-network`` none. A verifier that has a network installs its test
tools with it, as root: its grading sandbox keeps the default root capabilities
(``grading.root``); the agent's never does, so a verifier graded in place has its network
but not root's capabilities. What the
harness cannot honour (wildcard hosts, other modes) refuses the task, naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

PUBLIC, NONE, ALLOWLIST = "public", "no-network", "allowlist"


class _Phase(Protocol):
    """A ``task.toml`` table that may set a network (``[agent]``, ``[verifier]``)."""

    network_mode: object
    allowed_hosts: list[object]


class _Baseline(_Phase, Protocol):
    allow_internet: bool | None


class _Verifier(_Phase, Protocol):
    environment: object


@dataclass(frozen=True)
class Phase:
    """One phase's network as Harbor says it, and which setting said so."""

    mode: str
    hosts: tuple[str, ...]
    setting: str

    def same(self, other: Phase) -> bool:
        return (self.mode, set(self.hosts)) == (other.mode, set(other.hosts))


def _phase(mode: object, hosts: list[object], setting: str) -> Phase:
    return Phase(str(mode), tuple(str(h) for h in hosts), setting)


def phases(env: _Baseline, agent: _Phase, verifier: _Verifier) -> tuple[Phase, Phase]:
    """(the agent's, the verifier's) network: each phase's own setting, else its baseline
    (the ``[environment]``, ``[agent]`` and ``[verifier]`` tables of a ``task.toml``)."""
    if env.network_mode is not None:
        base = _phase(env.network_mode, env.allowed_hosts, "[environment] network_mode")
    elif env.allow_internet is False:
        base = Phase(NONE, (), "[environment] allow_internet = false")
    else:
        said = "allow_internet = true" if env.allow_internet else "network_mode (default public)"
        base = Phase(PUBLIC, (), f"[environment] {said}")
    verifier_base = base
    if isinstance(verifier.environment, dict) and verifier.environment:
        table = verifier.environment
        mode = table.get("network_mode", PUBLIC)
        hosts = table.get("allowed_hosts", [])
        where = "[verifier.environment] network_mode"
        verifier_base = _phase(mode, hosts if isinstance(hosts, list) else [hosts], where)
    agent_phase, verifier_phase = base, verifier_base
    if agent.network_mode is not None:
        agent_phase = _phase(agent.network_mode, agent.allowed_hosts, "[agent] network_mode")
    if verifier.network_mode is not None:
        verifier_phase = _phase(
            verifier.network_mode, verifier.allowed_hosts, "[verifier] network_mode"
        )
    return agent_phase, verifier_phase


def refusal(phase: Phase) -> str | None:
    """Why the harness cannot give this phase its network, or None."""
    if phase.mode not in (PUBLIC, NONE, ALLOWLIST):
        return f"network_mode = {phase.mode} ({phase.setting})"
    wild = [h for h in phase.hosts if "*" in h]
    if phase.mode == ALLOWLIST and wild:
        return (
            f"wildcard host allowlists ({phase.setting.replace('network_mode', 'allowed_hosts')}"
            f" has '{wild[0]}'; the harness allows names, addresses and CIDR blocks)"
        )
    return None


def phase_keys(phase: Phase) -> dict[str, object]:
    """The ``network`` / ``internet`` keys that give a phase run in the agent's sandbox (a
    step's turn, a grading in place) this network over the one it would inherit: none is
    ``network: []``. No ``root``: the agent's container never gets root's capabilities."""
    if phase.mode == PUBLIC:
        return {"internet": True}
    return {"network": list(phase.hosts) if phase.mode == ALLOWLIST else []}


def grading_keys(phase: Phase) -> dict[str, object]:
    """The task's ``grading`` keys for the verifier's sandbox."""
    if phase.mode == PUBLIC:
        return {"internet": True, "root": True}
    if phase.mode == ALLOWLIST and phase.hosts:
        return {"network": list(phase.hosts), "root": True}
    return {}
