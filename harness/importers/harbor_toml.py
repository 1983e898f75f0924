"""The parts of a Harbor ``task.toml`` the import reads, as models: read by ``harbor`` and by
the importer's parts (``harbor_steps`` and the others), so they sit below all of them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


def nonempty(table: object) -> bool:
    """A TOML table with at least one key."""
    return isinstance(table, dict) and bool(table)


class _Table(BaseModel):
    """A table of ``task.toml``: the keys the import reads are declared (with Harbor's
    defaults); Harbor's other keys are allowed and left unread. Keys only tested for
    presence or truth, or printed, stay ``object`` so any value Harbor accepts is read."""

    model_config = ConfigDict(extra="allow")


class HarborEnvironment(_Table):
    gpus: object = 0
    os: object = "linux"
    mcp_servers: object = None
    healthcheck: object = None
    environment_mode: object = None
    skills_dir: object = None
    docker_image: object = None
    network_mode: object = None
    """None: Harbor's default, public (or ``allow_internet``'s word); see ``harbor_network``."""
    allow_internet: bool | None = None
    allowed_hosts: list[object] = Field(default_factory=list)
    env: object = None
    workdir: str | None = None
    memory_mb: int | None = None
    memory: str | int = ""
    """A size such as ``2G`` or ``512M`` (``memory_mb`` wins when both are given)."""
    cpus: float | None = None


class HarborAgent(_Table):
    transport: object = None
    url: object = None
    user: str | int | None = None
    timeout_sec: float | None = None
    network_mode: object = None
    allowed_hosts: list[object] = Field(default_factory=list)


class HarborVerifier(_Table):
    environment: object = None
    environment_mode: object = None
    env: object = None
    timeout_sec: float = 300.0
    network_mode: object = None
    allowed_hosts: list[object] = Field(default_factory=list)


class HarborSolution(_Table):
    env: object = None


class HarborTask(_Table):
    name: str | None = None
    version: str | int | float = "1"


class HarborMetadata(_Table):
    category: object = "harbor"


class HarborToml(_Table):
    """The parts of a Harbor ``task.toml`` the import reads."""

    environment: HarborEnvironment = Field(default_factory=HarborEnvironment)
    agent: HarborAgent = Field(default_factory=HarborAgent)
    verifier: HarborVerifier = Field(default_factory=HarborVerifier)
    solution: HarborSolution = Field(default_factory=HarborSolution)
    task: HarborTask = Field(default_factory=HarborTask)
    metadata: HarborMetadata = Field(default_factory=HarborMetadata)
    steps: object = None
    """Present in multi-step tasks (refused)."""
    artifacts: list[object] = Field(default_factory=list)
    """Paths a separate verifier gets from the agent's environment (besides /logs/artifacts)."""

    @property
    def separate_verifier(self) -> bool:
        """The verifier runs in an environment of its own, built from ``tests/``."""
        mode = self.verifier.environment_mode
        return mode == "separate" or (mode != "shared" and nonempty(self.verifier.environment))
