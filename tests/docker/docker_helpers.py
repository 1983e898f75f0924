"""Constants and builders shared by the Docker backend tests (importable by name)."""

from __future__ import annotations

from pathlib import Path

from harness.config.models import EnvironmentSpec
from harness.sandbox.base import Environment

FIXTURES = Path(__file__).parent / "fixtures"
BASE_IMAGE = "harness-base:latest"


def make_env(name: str, root: Path, **spec) -> Environment:
    return Environment(EnvironmentSpec(name=name, **spec), root)


def http_server(client, labels: dict[str, str]):
    """A started HTTP server container (port 8000) on Docker's default bridge, reloaded so
    that ``attrs["NetworkSettings"]["IPAddress"]`` is its address; the caller removes it."""
    server = client.containers.run(
        BASE_IMAGE,
        ["python3", "-m", "http.server", "8000"],
        detach=True,
        labels=labels,
        network_mode="bridge",
        entrypoint=[],
    )
    server.reload()
    return server
