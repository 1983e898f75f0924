"""Fixtures for the browser tests: headless Chromium, a real retail run, a synthetic run.

Chromium is Debian's ``chromium`` package at /usr/bin/chromium. Without it the tests skip
with a reason, except under CI=true, where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.browser.cdp import Browser, chromium_path
from tests.conftest import REPO, run_cli

ARTIFACTS = REPO / "test-artifacts" / "browser"
SCREENSHOTS = REPO / "docs" / "screenshots"
MINI_SUITE = Path(__file__).with_name("retail-mini.yaml")


@pytest.fixture(scope="session")
def browser():
    if not chromium_path():
        reason = "headless Chromium not found at /usr/bin/chromium (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    b = Browser(width=1400, height=2000)
    yield b
    b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def save_screenshot(
    browser: Browser, session: str, name: str, *, full_page: bool = False, docs: bool = False
):
    """Save under test-artifacts/browser/; with ``docs`` also refresh docs/screenshots/ (the
    pictures in docs/) when HARNESS_UPDATE_SCREENSHOTS=1."""
    path = browser.screenshot(session, ARTIFACTS / f"{name}.png", full_page=full_page)
    if docs and os.environ.get("HARNESS_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / f"{name}.png")
    return path


@pytest.fixture(scope="session")
def retail_run(tmp_path_factory) -> tuple[str, str]:
    """(store URL, run id) of a real run of two retail task files on the local sandbox."""
    root = tmp_path_factory.mktemp("retail")
    url = f"sqlite:///{root / 'store.db'}"
    result = run_cli("run", str(MINI_SUITE), "--store", url, "-q", timeout=600)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    from harness.store import Store

    store = Store(url)
    run = store.latest_run()
    store.close()
    assert run is not None and run.status == "finished", result.stderr[-2000:]
    return url, run.id


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> tuple[str, str]:
    """(store URL, run id) of a synthetic run with costs, confidences and errors."""
    from tests.fixtures.sample_store import build_sample_store

    path = tmp_path_factory.mktemp("sample") / "sample.db"
    run_id = build_sample_store(path, tasks=40, trials=5)
    return f"sqlite:///{path}", run_id


class _Served:
    def __init__(self, url: str):
        from harness.viewer.server import make_server

        self.server = make_server(url, port=0)
        self.url = self.server.url
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.server.store.close()


@pytest.fixture(scope="session")
def retail_viewer(retail_run):
    served = _Served(retail_run[0])
    yield served
    served.close()


@pytest.fixture(scope="session")
def sample_viewer(sample_run):
    served = _Served(sample_run[0])
    yield served
    served.close()
