"""Constants and builders shared by the Docker backend tests (importable by name)."""

from __future__ import annotations

from pathlib import Path

from harness.config.models import EnvironmentSpec
from harness.sandbox.base import Environment

FIXTURES = Path(__file__).parent / "fixtures"
BASE_IMAGE = "harness-base:latest"


def make_env(name: str, root: Path, **spec) -> Environment:
    return Environment(EnvironmentSpec(name=name, **spec), root)
