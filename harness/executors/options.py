"""Typed ``executor_options`` of the ``ray`` executor (light: no ``ray`` import)."""

from __future__ import annotations

from pydantic import Field

from harness.config.models import Options


class RayOptions(Options):
    """``executor_options`` of the ``ray`` executor."""

    num_cpus: float | None = Field(
        None,
        ge=0,
        description="CPUs one trial task reserves; default 0 with the docker sandbox (the "
        "`docker` resource is the limit), else 1",
    )
    resources: dict[str, float] | None = Field(
        None,
        description='custom resources one trial task needs; default {"docker": 1} with the '
        "docker sandbox, else none",
    )
    runtime_env: dict[str, object] | None = Field(
        None, description="Ray runtime_env for the run's workers (env_vars, working_dir, ...)"
    )
    namespace: str = Field("harness", description="Ray namespace of the run's driver")
    log_to_driver: bool = Field(False, description="stream workers' stdout/stderr to the driver")
    ship_images: bool = Field(
        True,
        description="a worker whose Docker daemon lacks a pinned image gets it from the "
        "driver's node (docker save, Ray object store, docker load); false: such a node "
        "refuses its trials",
    )
    connect_timeout_s: float = Field(
        10.0,
        gt=0,
        description="seconds to wait for the cluster's address to accept a connection before "
        "the run refuses to start (Ray itself would retry for minutes)",
    )
