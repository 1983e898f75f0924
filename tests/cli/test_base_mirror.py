"""docker/build-base.sh takes its Debian mirror from the machine's apt configuration (one-line
and deb822), never from a host named in code; DEBIAN_MIRROR overrides it."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO

SCRIPT = REPO / "docker" / "build-base.sh"


def _mirror(apt_dir, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "DEBIAN_MIRROR"}
    full.update(APT_DIR=str(apt_dir), **env)
    return subprocess.run(
        ["bash", str(SCRIPT), "--print-mirror"], env=full, capture_output=True, text=True
    )


def test_one_line_sources_skip_vendor_security_and_updates(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "a.list").write_text(
        "deb [signed-by=/k.gpg arch=amd64] https://vendor.invalid/linux/debian bookworm stable\n"
        "deb http://sec.invalid/debian-security bookworm-security main\n"
        "deb http://upd.invalid/debian bookworm-updates main\n"
        "# deb http://commented.invalid/debian bookworm main\n"
        "deb http://main.invalid/debian/ bookworm main contrib\n"
    )
    done = _mirror(tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "http://main.invalid/debian"


def test_deb822_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://sec.invalid/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\nTypes: deb\nURIs: http://m822.invalid/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
    )
    assert _mirror(tmp_path).stdout.strip() == "http://m822.invalid/debian"


def test_override_and_a_clear_error_without_any(tmp_path):
    done = _mirror(tmp_path, DEBIAN_MIRROR="http://override.invalid/debian")
    assert done.stdout.strip() == "http://override.invalid/debian"
    done = _mirror(tmp_path)
    assert done.returncode == 1 and "no Debian mirror" in done.stderr
