"""Egress allowlists for Docker sandboxes: an environment that lists hosts in ``network``
gets its own bridge network whose outbound traffic may reach only those hosts.

The hosts are resolved once, when the provider prepares the environment; rules go into
Docker's ``DOCKER-USER`` iptables chain (consulted before Docker's own forwarding rules):
replies to allowed connections pass, new connections pass only to the listed addresses,
everything else from the bridge is dropped. The same rules go into ``INPUT`` for traffic
from the bridge to this host itself (its own addresses, the bridge's gateway: never
forwarded, so ``DOCKER-USER`` does not see it): without them a sandbox allowed one host
reached every service listening on the host. Rules and network are removed when the provider
closes. This needs root and iptables (Debian's docker.io brings it); when the rules cannot
be installed the run refuses to start rather than run with an open network.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import subprocess
import uuid
from dataclasses import dataclass, field

from harness.errors import EnvironmentBuildError

CHAIN = "DOCKER-USER"
CHAINS = (CHAIN, "INPUT")
"""Where an allowlist's rules go: forwarded traffic, and traffic to this host."""


def resolve(hosts: list[str]) -> list[str]:
    """IPv4 addresses or networks for each host (a name, an address or a CIDR block)."""
    out: list[str] = []
    for host in hosts:
        try:
            out.append(str(ipaddress.ip_network(host, strict=False)))
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            raise EnvironmentBuildError(f"network host '{host}' does not resolve: {exc}") from None
        out.extend(sorted({f"{info[4][0]}/32" for info in infos}))
    return sorted(set(out))


@dataclass
class Allowlist:
    """One environment's egress-restricted bridge network and its iptables rules."""

    environment: str
    hosts: list[str]
    network_name: str = ""
    bridge: str = ""
    destinations: list[str] = field(default_factory=list)
    rules: list[tuple[str, list[str]]] = field(default_factory=list)
    """(chain, rule) as installed."""

    def create(self, client, labels: dict[str, str] | None = None) -> str:
        """Create the network and install the rules; returns the network name."""
        tag = uuid.uuid4().hex[:10]
        self.bridge = f"hx{tag}"  # Linux interface names are at most 15 characters
        self.network_name = f"harness-allow-{self.environment}-{tag}"
        self.destinations = resolve(self.hosts)
        try:
            client.networks.create(
                self.network_name,
                driver="bridge",
                options={"com.docker.network.bridge.name": self.bridge},
                labels={**(labels or {}), "harness": "1", "harness.environment": self.environment},
            )
        except Exception as exc:
            raise EnvironmentBuildError(
                f"environment '{self.environment}': cannot create its network: {exc}"
            ) from None
        # Inserted at the top in reverse, so they end up in this order.
        wanted = [
            [
                "-o",
                self.bridge,
                "-m",
                "conntrack",
                "--ctstate",
                "ESTABLISHED,RELATED",
                "-j",
                "ACCEPT",
            ],
            [
                "-i",
                self.bridge,
                "-m",
                "conntrack",
                "--ctstate",
                "ESTABLISHED,RELATED",
                "-j",
                "ACCEPT",
            ],
            *[["-i", self.bridge, "-d", d, "-j", "ACCEPT"] for d in self.destinations],
            ["-i", self.bridge, "-j", "DROP"],
        ]
        try:
            for chain in CHAINS:
                for rule in reversed(wanted):
                    if chain == "INPUT" and rule[0] == "-o":
                        continue  # replies to the bridge are never INPUT's
                    _iptables("-I", chain, "1", *rule)
                    self.rules.append((chain, rule))
        except EnvironmentBuildError as exc:
            self.remove(client)
            raise EnvironmentBuildError(
                f"environment '{self.environment}': cannot enforce its network allowlist "
                f"({', '.join(self.hosts)}): {exc}"
            ) from None
        return self.network_name

    def remove(self, client) -> None:
        for chain, rule in self.rules:
            with contextlib.suppress(EnvironmentBuildError):
                _iptables("-D", chain, *rule)
        self.rules.clear()
        if self.network_name:  # the provider removes attached containers first
            with contextlib.suppress(Exception):
                client.networks.get(self.network_name).remove()


@dataclass
class OpenNetwork:
    """The run's open-egress bridge: outbound traffic goes where Docker's NAT sends it (the
    internet, where this host reaches it); inter-container traffic is off, so a trial's
    sandbox cannot reach another trial's. Made once per provider, removed when it closes
    (and by ``harness gc`` when its owner is dead: it carries the owner labels)."""

    network_name: str = ""

    def create(self, client, labels: dict[str, str] | None = None) -> str:
        tag = uuid.uuid4().hex[:10]
        self.network_name = f"harness-open-{tag}"
        try:
            client.networks.create(
                self.network_name,
                driver="bridge",
                options={
                    "com.docker.network.bridge.name": f"ho{tag}",
                    "com.docker.network.bridge.enable_icc": "false",
                },
                labels={**(labels or {}), "harness": "1", "harness.network": "open"},
            )
        except Exception as exc:
            raise EnvironmentBuildError(f"cannot create the open-egress network: {exc}") from None
        return self.network_name

    def remove(self, client) -> None:
        if self.network_name:  # the provider removes attached containers first
            with contextlib.suppress(Exception):
                client.networks.get(self.network_name).remove()


def close_to_host(bridge: str) -> None:
    """Drop what containers on ``bridge`` send to this host itself (its addresses, the
    bridge's gateway), replies to the host's own connections excepted: an ``internal``
    network (a trial's services) forwards nothing, but Docker still lets its containers
    reach every service listening on the host. Removed by ``remove_rules_for``."""
    _iptables("-I", "INPUT", "1", "-i", bridge, "-j", "DROP")
    _iptables(
        "-I", "INPUT", "1", "-i", bridge,
        "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT",
    )  # fmt: skip


def remove_rules_for(bridge: str) -> None:
    """Delete every rule of ``CHAINS`` that names ``bridge`` (left behind by a killed run)."""
    for chain in CHAINS:
        listing = subprocess.run(
            ["iptables", "-w", "10", "-S", chain], capture_output=True, text=True, timeout=30
        )
        for line in listing.stdout.splitlines():
            parts = line.split()
            if parts[:2] == ["-A", chain] and bridge in parts:
                with contextlib.suppress(EnvironmentBuildError):
                    _iptables("-D", chain, *parts[2:])


def _iptables(*args: str) -> None:
    try:
        result = subprocess.run(
            ["iptables", "-w", "10", *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentBuildError(f"iptables failed: {exc}") from None
    if result.returncode != 0:
        raise EnvironmentBuildError(f"iptables {' '.join(args)}: {result.stderr.strip()}")
