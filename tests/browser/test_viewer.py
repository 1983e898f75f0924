"""`harness view` in headless Chromium: every page loads without console errors; a failed
retail trial shows its state diff, its rule results and its transcript."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.browser.conftest import save_screenshot
from tests.conftest import REPO


def _failed_trial_with_diff(store_url: str, run_id: str) -> int:
    """Id of a failed trial whose state_diff verdict lists differences."""
    from harness.store import Store

    store = Store(store_url)
    try:
        for t in store.trials(run_id):
            if t.status != "failed":
                continue
            for g in (t.evidence or {}).get("graders", []):
                d = g.get("details") or {}
                if any(d.get(k) for k in ("missing_changes", "wrong_values", "side_effects")):
                    return t.id
    finally:
        store.close()
    raise AssertionError("the simulated arm failed no trial with a state difference")


def test_every_viewer_page_loads_cleanly(browser, retail_viewer, retail_run):
    _, run_id = retail_run
    base = retail_viewer.url
    pages = {
        "/": "Runs",
        f"/run/{run_id}": "Tasks",
        f"/run/{run_id}/report": "Release gate:",
        f"/run/{run_id}/trials": "trials",
        f"/run/{run_id}/trials?status=failed&arm=simulated": "status = failed",
    }
    for path, text in pages.items():
        load, session = browser.open(base + path)
        try:
            assert load.errors == [], (path, load.errors)
            assert text in load.dom, path
            assert run_id in load.dom or path == "/", path
        finally:
            browser.close_tab(session)


def test_trial_page_shows_state_diff_and_transcript(browser, retail_viewer, retail_run):
    url, run_id = retail_run
    trial_id = _failed_trial_with_diff(url, run_id)
    load, session = browser.open(f"{retail_viewer.url}/trial/{trial_id}")
    try:
        assert load.errors == [], load.errors
        dom = load.dom
        assert 'class="diff state-diff"' in dom
        assert re.search(r'<tr class="(missing|wrong|side)"><td>', dom)
        assert re.search(r'class="path">(orders|payments)\.W\d+', dom)
        for text in ("Grader evidence", "Transcript", "seed", "image id", "tokens", "cost"):
            assert text in dom
        # Any trial can be labelled pass or fail; a trial no judge graded has no criteria.
        assert 'id="label-form"' in dom and 'name="passed"' in dom
        assert 'name="criterion:' not in dom
        assert 'class="event k-tool_call' in dom
        n_diff_rows = browser.eval(
            "document.querySelectorAll('table.state-diff tbody tr').length", session
        )
        assert n_diff_rows >= 1
        save_screenshot(browser, session, "trial", docs=True)
    finally:
        browser.close_tab(session)


def test_trial_page_marks_rule_violations_at_their_step(browser, sample_viewer, sample_run):
    url, run_id = sample_run
    from harness.store import Store

    store = Store(url)
    trial = next(t for t in store.trials(run_id) if (t.evidence or {}).get("harms"))
    store.close()
    step = trial.evidence["harms"][0]["step"]
    load, session = browser.open(f"{sample_viewer.url}/trial/{trial.id}")
    try:
        assert load.errors == [], load.errors
        cls = browser.eval(f"document.getElementById('step-{step}').className", session)
        assert "violation" in cls
        assert "forbidden action" in browser.eval(
            f"document.getElementById('step-{step}').textContent", session
        )
        assert "never reached" in load.dom
        # Full results come from the blobs table by reference.
        assert "full result (" in load.dom and "/blob/" in load.dom
        save_screenshot(browser, session, "trial-violation", docs=True)
    finally:
        browser.close_tab(session)


def test_report_links_open_trial_pages(browser, sample_viewer, sample_run, tmp_path):
    from harness.report.html_page import write_html

    url, run_id = sample_run
    out = write_html(run_id, url, tmp_path / "r.html", viewer_url=sample_viewer.url)
    load, session = browser.open(out.as_uri())
    try:
        href = browser.eval(
            "document.querySelector('#task-table a[href*=\"/trial/\"]').href", session
        )
    finally:
        browser.close_tab(session)
    assert href.startswith(sample_viewer.url + "/trial/")
    load, session = browser.open(href)
    try:
        assert load.errors == [], load.errors
        assert "Grader evidence" in load.dom
    finally:
        browser.close_tab(session)


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url) as r:  # noqa: S310 - loopback test server
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def test_blob_and_missing_pages(sample_viewer, sample_run):
    from harness.store import Store

    url, _ = sample_run
    base = sample_viewer.url
    assert _get(f"{base}/trial/999999999")[0] == 404
    assert _get(f"{base}/run/no-such-run")[0] == 404
    assert _get(f"{base}/nowhere")[0] == 404
    store = Store(url)
    with store.engine.connect() as conn:
        from sqlalchemy import text

        ref = conn.execute(text("SELECT sha256 FROM blobs LIMIT 1")).scalar_one()
    full = store.blob(ref).decode()
    store.close()
    status, ctype, body = _get(f"{base}/blob/{ref}")
    assert status == 200 and ctype.startswith("text/plain") and body == full
    # Escaping: a task id or tool output never becomes markup.
    status, _, body = _get(f"{base}/run/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert status == 404 and "<script>alert(1)" not in body


def test_view_command_serves_on_loopback_only(retail_run):
    url, run_id = retail_run
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "view", "--store", url, "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        body = None
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as r:  # noqa: S310
                    body = r.read().decode()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert body is not None and run_id in body
        # Another Host header (DNS rebinding) is refused.
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": "evil.example"})
        try:
            urllib.request.urlopen(req)  # noqa: S310
            raise AssertionError("a foreign Host header was served")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        # Bound to loopback: the listening socket is 127.0.0.1, not 0.0.0.0.
        listening = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True
        )
        if listening.returncode == 0 and listening.stdout.strip():
            local = listening.stdout.split()[3]  # State Recv-Q Send-Q Local Peer
            assert local == f"127.0.0.1:{port}", listening.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=10)
