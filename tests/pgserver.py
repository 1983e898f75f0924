"""A throwaway PostgreSQL 15 server on a temporary directory and port: the tests' session
server, and the server the store fault scripts in ``benchmarks/`` stop, restart and cut off.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")


def postgres_binaries() -> tuple[str, str] | None:
    """(initdb, pg_ctl), or None when PostgreSQL is not installed."""
    initdb = shutil.which("initdb") or str(BIN / "initdb")
    pg_ctl = shutil.which("pg_ctl") or str(BIN / "pg_ctl")
    return (initdb, pg_ctl) if Path(initdb).exists() and Path(pg_ctl).exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThrowawayPostgres:
    """initdb + pg_ctl start on a fresh directory; ``stop``/``start`` make outages.

    Not under pytest's tmp dir: that is private to root, and postgres runs as its own user
    (PostgreSQL refuses to run as root, so as root every command runs as ``postgres``)."""

    def __init__(self) -> None:
        found = postgres_binaries()
        if found is None:
            raise FileNotFoundError("PostgreSQL binaries (initdb, pg_ctl) are not installed")
        self.initdb, self.pg_ctl = found
        self.base = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.data, self.sock = self.base / "data", self.base / "sock"
        self.sock.mkdir()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres")
            shutil.chown(self.sock, "postgres")
            os.chmod(self.base, 0o755)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*self.prefix, self.initdb, "-D", str(self.data), "-U", "harness", "--auth=trust"]
            + ["-E", "UTF8"],
            check=True,
            capture_output=True,
        )
        self.port = _free_port()
        self.start()

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the ``postgres`` database."""
        return f"postgresql+psycopg://harness@127.0.0.1:{self.port}/postgres"

    @property
    def admin(self) -> str:
        """The same database as a plain libpq URL (for psycopg)."""
        return f"postgresql://harness@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1"
        subprocess.run(
            [*self.prefix, self.pg_ctl, "-D", str(self.data), "-l", str(self.base / "log")]
            + ["-w", "-o", opts, "start"],
            check=True,
            capture_output=True,
        )

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(
            [*self.prefix, self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"],
            capture_output=True,
        )

    def new_database(self) -> str:
        """A new, empty database; its SQLAlchemy URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[-1].split("?", 1)[0]
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def terminate_connections(self, url: str) -> int:
        """Cut every connection to ``url``'s database off (as a failover does); how many."""
        import psycopg

        name = url.rsplit("/", 1)[-1].split("?", 1)[0]
        with psycopg.connect(self.admin, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            ).fetchall()
        return len(rows)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
