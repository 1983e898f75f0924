"""Harbor's per-phase networks (issue 25 points 1 and 3): the 8 examples whose agent and
verifier (or step) networks differ in a task graded in the agent's sandbox import, each
phase's network as its own (recorded per trial), and two of them run on Docker, rebuilt on
the local base image with ``https://example.com/`` (this machine has no internet) replaced
by an HTTP server on this host that says "Example Domain": ``e-a-diff`` (the agent public,
its verifier on no network) and ``steps-mixed`` (step one public then an offline verifier,
step two offline then a public verifier). Harbor's own tests check both sides of each
phase; the oracle passes them, noop fails."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.config.loader import load_suite
from harness.importers.harbor import import_harbor
from harness.network import recorded
from tests.conftest import REPO, run_cli
from tests.interop.tau_support import THIRD_PARTY

HARBOR = THIRD_PARTY / "harbor" / "examples" / "tasks"
MATRIX = "network-policy-matrix"
PHASED = {
    "islo-network-policy-demo": {
        "agent": "allowlist: api.anthropic.com, gist.github.com, gist.githubusercontent.com",
        "grading": "open",
    },
    f"{MATRIX}/dynamic/e-a-diff": {"agent": "open", "grading": "none"},
    f"{MATRIX}/dynamic/e-a-diff-v-match": {"agent": "open", "grading": "none"},
    f"{MATRIX}/dynamic/e-v-diff": {"agent": "open", "grading": "none"},
    f"{MATRIX}/extra-allowed-hosts/a-allow-agent-host": {"agent": "none", "grading": "open"},
    f"{MATRIX}/dynamic/e-ve-sa-sv-diff": {
        "agent": "none",
        "grading": "open",
        "agent: step all-differ": "open",
        "grading: step all-differ": "allowlist: www.iana.org",
    },
    f"{MATRIX}/dynamic/sa-sv-diff": {
        "agent": "open",
        "grading": "open",
        "agent: step both-offline": "none",
        "grading: step both-offline": "none",
    },
    f"{MATRIX}/dynamic/steps-mixed": {
        "agent": "open",
        "grading": "open",
        "grading: step online-agent-offline-verifier": "none",
        "agent: step offline-agent-online-verifier": "none",
        "grading: step offline-agent-online-verifier": "open",
    },
}
"""Each example's phases as its trial rows record them (``evidence.network``)."""


def _harbor_or_skip() -> None:
    if not HARBOR.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the pinned Harbor examples are missing at {HARBOR}")
        pytest.skip(f"the pinned Harbor examples are not at {HARBOR}")


def test_the_examples_import_with_each_phases_network(tmp_path: Path) -> None:
    _harbor_or_skip()
    for name in PHASED:
        shutil.copytree(HARBOR / name, tmp_path / "src" / name)
    done = import_harbor(tmp_path / "src", tmp_path / "out")
    assert sorted(done.imported) == sorted(PHASED) and not done.refused, done.refused
    resolved = load_suite(
        tmp_path / "out" / "tasks" / "harbor" / "suite.yaml", {"allow_internet": True}
    )
    got = {lt.task.id: recorded(resolved.environments, lt.task) for lt in resolved.tasks}
    want = {f"harbor/{name.replace('/', '-').lower()}": net for name, net in PHASED.items()}
    assert got == want


class _Example(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><title>Example Domain</title></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def example_com(docker_ready) -> Iterator[str]:
    """``http://GATEWAY:PORT/``: a stand-in for example.com on this host, on the address of
    Docker's default bridge (reachable from any open-egress sandbox, never from none)."""
    import docker

    client = docker.from_env()
    ipam = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    client.close()  # the daemon's default: the subnet's first address
    gateway = ipam.get("Gateway") or str(next(ipaddress.ip_network(ipam["Subnet"]).hosts()))
    server = ThreadingHTTPServer(("0.0.0.0", 0), _Example)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{gateway}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _rebuilt(tmp: Path, url: str) -> Path:
    """The two examples on the offline base image, their URL the local stand-in."""
    src = tmp / "src"
    for name in ("e-a-diff", "steps-mixed"):
        shutil.copytree(HARBOR / MATRIX / "dynamic" / name, src / name)
    for path in src.rglob("*"):
        if path.name == "Dockerfile":
            path.write_text(
                re.sub(r"(?m)^FROM \S+", "FROM harness-base:bookworm-1", path.read_text())
            )
        elif path.suffix in (".sh", ".md"):
            path.write_text(path.read_text().replace("https://example.com/", url))
    return src


def test_two_examples_pass_harbors_own_network_checks_on_docker(
    tmp_path: Path, example_com: str
) -> None:
    _harbor_or_skip()
    result = run_cli(
        "import", "harbor", str(_rebuilt(tmp_path, example_com)), "--out", str(tmp_path / "out")
    )
    assert "2 imported, 0 refused" in result.stdout, result.stdout + result.stderr
    store = tmp_path / "h.db"
    suite = tmp_path / "out" / "tasks" / "harbor" / "suite.yaml"
    run = run_cli(
        "run", str(suite), "--allow-internet", "--store", f"sqlite:///{store}", "-q", timeout=900
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert sum(line.startswith("open egress") for line in run.stderr.splitlines()) == 1
    rows = sqlite3.connect(store).execute(
        "select arm, task_id, status, reason, evidence from trials"
    )
    got = {(arm, task): (status, reason, json.loads(ev)) for arm, task, status, reason, ev in rows}
    assert len(got) == 4
    for (arm, task), (status, reason, ev) in got.items():
        assert status == ("passed" if arm == "oracle" else "failed"), (arm, task, reason)
        assert ev["failure"] is None, (arm, task, ev["failure"])
    steps = got[("oracle", "harbor/steps-mixed")][2]
    assert [s["reward"] for s in steps["steps"]] == [1.0, 1.0]
    assert steps["network"] == PHASED[f"{MATRIX}/dynamic/steps-mixed"]
    assert got[("oracle", "harbor/e-a-diff")][2]["network"] == {"agent": "open", "grading": "none"}


def test_the_documented_counts_are_what_the_import_gives(tmp_path: Path) -> None:
    """README ("Benchmarks it runs") and docs/interop.md state how many of Harbor's examples
    import and how many are refused (``benchmarks/harbor_examples.py``): they must be what
    importing the pinned examples gives now."""
    _harbor_or_skip()
    done = import_harbor(HARBOR, tmp_path)
    total, imported, refused = (
        len(done.imported) + len(done.refused),
        len(done.imported),
        len(done.refused),
    )
    readme = (REPO / "README.md").read_text()
    assert f"{imported} of Harbor's {total} examples import" in readme
    assert f"| {refused} refused with one line naming the feature" in readme
    interop = (REPO / "docs" / "interop.md").read_text()
    assert f"`--allow-internet`) | {imported} (was " in interop, f"interop.md: {imported} imported"
    assert f"| refused | {refused} (was " in interop, (
        f"docs/interop.md: refused should be {refused}"
    )
    assert f"{len(done.open_egress)} have Harbor's public network" in interop
