"""Docker SDK clients: the daemon the suite names (or the environment's), and whether one
answers at all (``--sandbox auto``)."""

from __future__ import annotations

NO_DAEMON_HINT = (
    "start one (as root: bash docker/ci-setup.sh) or choose `--sandbox local` "
    "(no isolation: commands run on this machine)"
)


def make_client(base_url: str | None, timeout: float, pool: int):
    """A Docker SDK client: `base_url`, else the environment (DOCKER_HOST, TLS settings)."""
    import docker

    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout, max_pool_size=pool)
    return docker.from_env(timeout=timeout, max_pool_size=pool)


def docker_available(base_url: str | None = None, timeout: float = 3.0) -> bool:
    """True when a Docker daemon answers a ping within ``timeout`` seconds (for ``auto``)."""
    try:
        client = make_client(base_url, timeout, 1)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


__all__ = ["NO_DAEMON_HINT", "docker_available", "make_client"]
