"""Each trial's disk quota (``limits.disk``) on bwrap and Docker: a sandbox that fills its
disk gets ENOSPC at the quota, in its own places only (work dir and ``/tmp`` together);
a second sandbox of the same run still writes; the image's files are there and the
harness still reads the full sandbox's files out (export); nothing is left mounted.

Without the quota (main before it, or a harness that may not mount), ``dd`` wrote all
64 MiB into each place on the host's disk and the assertion on ENOSPC fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness.config.loader import load_suite
from harness.config.models import Limits
from harness.sandbox.base import SandboxRequest
from tests.conftest import REPO, require_docker
from tests.integrity.test_bwrap_sandbox import require_bwrap

QUOTA_MIB = 16
LIMITS = Limits(memory="256m", pids=64, disk=f"{QUOTA_MIB}m")
FILL = (
    "dd if=/dev/zero of=data/fill bs=1M count=64 2>&1 | grep -o 'No space left on device'; "
    "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1 | grep -o 'No space left on device'; "
    "du -sk data/fill /tmp/fill | awk '{s += $1} END {print s}'"
)


def _mounts(pid: int | None = None) -> set[str]:
    """The trial mounts of process ``pid`` (default: this one; its pid is in their names,
    ``make_trial_dir``): other processes' runs mount theirs at the same time."""
    mine = f"-{os.getpid() if pid is None else pid}-"
    with open("/proc/mounts") as fh:
        return {p for line in fh if "harness-" in (p := line.split()[1]) and mine in p}


def _provider(backend: str):
    if backend == "bwrap":
        from harness.sandbox.bwrap import BwrapProvider

        return BwrapProvider(limits=LIMITS)
    from harness.sandbox.docker import DockerProvider

    return DockerProvider()


def _quota_holds(backend: str) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but not root: the disk quota cannot be tested", pytrace=False)
        pytest.skip("the disk quota is enforced only when the harness runs as root")
    env = load_suite(REPO / "tasks/shell/suite.yaml").environments["shell"]
    before = _mounts()

    async def main() -> dict:
        provider = _provider(backend)
        out: dict = {}
        try:
            ids = await provider.prepare([env])
            request = SandboxRequest(env, ids["shell"], limits=LIMITS, labels={"harness.run": "q"})
            full = await provider.create(request)
            other = await provider.create(request)
            try:
                out["image_files"] = (await full.exec("cat etc/app.conf", timeout=30)).stdout
                out["fill"] = (await full.exec(FILL, timeout=60)).stdout.split()
                out["other"] = await other.exec(
                    "dd if=/dev/zero of=data/x bs=1M count=8 2>/dev/null && stat -c %s data/x",
                    timeout=60,
                )
                product = await full.export(["data"])
                try:
                    names = {m.name for m, _ in product.members()}
                finally:
                    product.close()
                out["exported"] = "work/data/fill" in names
                out["mounted"] = _mounts() - before
            finally:
                await full.destroy()
                await other.destroy()
        finally:
            await provider.close()
        out["left"] = _mounts() - before
        return out

    out = anyio.run(main)
    assert "port" in out["image_files"], out["image_files"]  # the image's own files
    assert out["fill"][:2] == ["No", "space"] and out["fill"].count("No") == 2, out["fill"]
    assert int(out["fill"][-1]) <= QUOTA_MIB * 1024, out["fill"]  # both places, one quota
    assert out["other"].ok and out["other"].stdout.strip() == str(8 << 20), out["other"]
    assert out["exported"]
    assert out["mounted"], "no quota mount while the sandboxes lived"
    assert out["left"] == set(), out["left"]


def test_disk_quota_on_bwrap():
    require_bwrap()
    _quota_holds("bwrap")


@pytest.mark.usefixtures("docker_ready")
def test_disk_quota_on_docker():
    require_docker()
    _quota_holds("docker")


def test_gc_unmounts_quota_dirs_of_dead_runs(tmp_path):
    """A killed run leaves its trials' tmpfs mounted: `harness gc` detaches and removes it
    (the Docker provider's own gc looks only at quota directories)."""
    from harness.sandbox import disk_quota, trial_dirs

    if os.geteuid() != 0:
        pytest.skip("the disk quota is mounted only when the harness runs as root")
    code = (
        "from harness.sandbox import trial_dirs; "
        f"print(trial_dirs.make_trial_dir('harness-quota', {str(tmp_path)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    dead = Path(done.stdout.strip())
    disk_quota.mount_quota(dead, "1m")
    (dead / "left").write_text("x")
    bwrap_dir = trial_dirs.make_trial_dir("harness-bwrap", str(tmp_path))  # alive: ours
    try:
        assert os.path.ismount(dead)
        assert trial_dirs.gc(str(tmp_path), ("harness-quota",)) == [dead]
        assert not dead.exists() and not os.path.ismount(dead) and bwrap_dir.exists()
    finally:
        disk_quota.unmount(dead)
