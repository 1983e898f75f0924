"""Labelling trials in `harness view`: two trials labelled in headless Chromium are counted
by `harness judge-agreement`; bad posts (no token, a foreign origin, no name, an unknown
criterion) are refused over real HTTP against `harness view` and store nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser.cdp import CDPError
from tests.browser.conftest import _Served, save_screenshot
from tests.conftest import REPO, run_cli
from tests.fakes.judge_server import ScriptedJudge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge import judge_grader, judged_suite, rows

CRITERIA = [
    {"id": "correct", "text": "The answer is the right sum."},
    {"id": "terse", "text": "The answer is one number."},
]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of 3 tasks x 1 trial x 2 arms, judged on two criteria by a judge that errs."""
    tmp = tmp_path_factory.mktemp("labels")
    judge = ScriptedJudge(sensitivity=0.8, specificity=0.8, seed=3, criteria=["correct", "terse"])
    with FakeOpenAI(default=judge) as server:
        grader = judge_grader(server.base_url, criteria=CRITERIA)
        suite = judged_suite(tmp, grader, n_tasks=3, trials=1)
        db = tmp / "store.db"
        out = run_cli("run", str(suite), "--store", f"sqlite:///{db}", "-q", timeout=240)
        assert out.returncode in (0, 1), out.stderr
    trials = rows(db)
    assert all(t["status"] in ("passed", "failed") for t in trials), trials
    return {"db": db, "url": f"sqlite:///{db}", "run": trials[0]["run_id"], "trials": trials}


def _labels(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT trial_id, criterion, passed, labeller, note, source FROM human_labels "
            "ORDER BY id"
        ).fetchall()
    finally:
        con.close()


def _replaced(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT trial_id, criterion, passed, labeller FROM human_labels_replaced"
        ).fetchall()
    finally:
        con.close()


def _submit(browser, session: str, fill: str) -> str:
    """Run ``fill`` (JavaScript setting the form's fields), submit, and return the DOM of
    the page the browser lands on."""
    browser.eval("window.__before = true;" + fill, session)
    browser.eval("document.querySelector('#label-form button[type=submit]').click()", session)
    for _ in range(200):
        time.sleep(0.05)
        try:
            if browser.eval("window.__before === undefined && document.readyState", session) == (
                "complete"
            ):
                return browser.eval("document.documentElement.outerHTML", session)
        except CDPError:
            continue  # the old page's context went away mid-navigation
    raise AssertionError("the label form's POST did not land on a page")


def _check(name: str, value: str) -> str:
    return f'document.querySelector(\'input[name="{name}"][value="{value}"]\').checked = true;'


def _type(name: str, value: str) -> str:
    return f"document.querySelector('input[name=\"{name}\"]').value = {json.dumps(value)};"


def test_two_trials_labelled_in_the_browser_count_in_judge_agreement(browser, judged) -> None:
    first, second = judged["trials"][0], judged["trials"][1]
    out = run_cli("judge-agreement", judged["run"], "--json", "--store", judged["url"])
    assert out.returncode == 0, out.stderr
    # Nothing labelled yet: the corrected rates say where to label.
    assert "(harness view, harness label)" in json.loads(out.stdout)["corrected"]["note"]
    served = _Served(judged["url"])
    try:
        load, tab = browser.open(f"{served.url}/trial/{first['id']}")
        assert load.errors == [], load.errors
        assert 'id="label-form"' in load.dom and "No labels yet." in load.dom
        for cid in ("correct", "terse"):
            assert f'name="criterion:{cid}"' in load.dom
        # ann says the opposite of the judge about the trial, and passes one criterion.
        dom = _submit(
            browser,
            tab,
            _type("labeller", "ann")
            + _check("passed", "fail" if first["passed"] else "pass")
            + _type("note", "the total is off by one")
            + _check("criterion:correct", "pass")
            + _type("note:correct", "it did add"),
        )
        assert "the total is off by one" in dom and "criterion correct" in dom
        assert re.search(r"<td>ann</td><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>", dom)
        save_screenshot(browser, tab, "trial-labels", docs=True)
        # The page links the next trial ann has not labelled; the browser remembers her name.
        assert f'by ann: <a href="/trial/{second["id"]}#labels">' in dom
        browser.eval("document.querySelector('#next-to-label a').click()", tab)
        for _ in range(200):
            time.sleep(0.05)
            if browser.eval("location.pathname", tab) == f"/trial/{second['id']}":
                break
        dom = browser.eval("document.documentElement.outerHTML", tab)
        assert 'id="labeller" name="labeller" maxlength="100" value="ann"' in dom
        # The second trial is labelled as the judge said.
        dom = _submit(browser, tab, _check("passed", "pass" if second["passed"] else "fail"))
        assert f'by ann: <a href="/trial/{judged["trials"][2]["id"]}#labels">' in dom
        assert "<td>ann</td>" in dom and "No labels yet." not in dom
        browser.close_tab(tab)

        # ann changes her mind about the first trial: the newest counts, the old one is kept.
        load, tab = browser.open(f"{served.url}/trial/{first['id']}")
        dom = _submit(browser, tab, _check("passed", "pass" if first["passed"] else "fail"))
        assert "1 earlier label(s), replaced" in dom
        browser.close_tab(tab)
    finally:
        served.close()

    stored = _labels(judged["db"])
    assert [(t, c, bool(p), w) for t, c, p, w, _, _ in stored] == [
        (first["id"], "correct", True, "ann"),
        (second["id"], "", bool(second["passed"]), "ann"),
        (first["id"], "", bool(first["passed"]), "ann"),
    ]
    assert {s for *_, s in stored} == {"viewer"}
    assert _replaced(judged["db"]) == [(first["id"], "", int(not first["passed"]), "ann")]
    assert rows(judged["db"]) == judged["trials"]  # no verdict touched

    out = run_cli("judge-agreement", judged["run"], "--json", "--store", judged["url"])
    assert out.returncode == 0, out.stderr
    agreement = json.loads(out.stdout)["agreement"]
    # Both labels agree with the judge (the replaced disagreeing one does not count).
    assert agreement["n"] == 2 and agreement["tied_labels"] == 0
    assert agreement["accuracy"]["estimate"] == 1.0
    n_pass = sum(bool(t["passed"]) for t in (first, second))
    confusion = agreement["confusion"]
    assert confusion["judge_pass_human_pass"] == n_pass
    assert confusion["judge_fail_human_fail"] == 2 - n_pass
    # ann's label of criterion 'correct' (pass) against the judge's verdict on it.
    evidence = json.loads(first["evidence"])
    verdicts = [g["details"]["judge"]["criteria"] for g in evidence["graders"]]
    judge_said = next(c["passed"] for cs in verdicts for c in cs if c["id"] == "correct")
    per = json.loads(out.stdout)["criteria"]
    assert list(per) == ["correct"] and per["correct"]["n"] == 1
    cell = "judge_pass_human_pass" if judge_said else "judge_fail_human_pass"
    assert per["correct"]["confusion"][cell] == 1
    assert sum(per["correct"]["confusion"].values()) == 1
    terminal = run_cli("judge-agreement", judged["run"], "--store", judged["url"]).stdout
    assert "per criterion they labelled" in terminal
    assert all(len(line) <= 80 for line in terminal.splitlines()), terminal
    assert "  correct: 1 trials labelled" in terminal


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(url: str, data: dict[str, str] | None = None, **headers: str) -> tuple[int, str]:
    body = None if data is None else urllib.parse.urlencode(data).encode()
    if body is not None:
        headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:  # noqa: S310 - a loopback test server
            # No page may be framed (a framed label form could be clicked for you).
            assert r.headers["X-Frame-Options"] == "DENY"
            assert r.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _report_labelled(url: str) -> int:
    """The report's count of trials with a judge verdict and a human label."""
    status, html = _request(url)
    found = re.search(r"Judge against people: (\d+) trials with a verdict and a human label", html)
    assert status == 200 and found is not None, html[-2000:]
    return int(found.group(1))


def _progress(url: str) -> int:
    """The run page's count of trials people labelled (of the run's 6)."""
    status, html = _request(url)
    found = re.search(r"Human labels: (\d+) of 6 trials labelled", html)
    assert status == 200 and found is not None, html[-2000:]
    return int(found.group(1))


def test_bad_label_posts_are_refused_and_store_nothing(judged) -> None:
    port = _free_port()
    cmd = [sys.executable, "-m", "harness.cli", "view", "--store", judged["url"]]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--labeller", "bo"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    trial = judged["trials"][2]
    page = f"http://127.0.0.1:{port}/trial/{trial['id']}"
    try:
        for _ in range(600):
            try:
                status, html = _request(page)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert status == 200
        assert 'name="labeller" maxlength="100" value="bo"' in html  # --labeller
        token = re.search(r'name="token" value="([^"]+)"', html)
        assert token is not None
        before = _labels(judged["db"])
        judged_n = _report_labelled(f"http://127.0.0.1:{port}/run/{judged['run']}/report")
        progress = _progress(f"http://127.0.0.1:{port}/run/{judged['run']}")
        good = {"token": token.group(1), "labeller": "bo", "passed": "pass"}
        post = page + "/label"

        status, body = _request(post, {k: v for k, v in good.items() if k != "token"})
        assert status == 403 and "token is missing or wrong" in body
        assert _request(post, {**good, "token": "guessed"})[0] == 403
        status, body = _request(post, good, Origin="http://evil.example")
        assert status == 403 and "another site" in body
        status, body = _request(post, {**good, "labeller": "  "})
        assert status == 400 and 'id="label-error"' in body
        assert "Not stored: say who is labelling: the name field is empty." in body
        status, body = _request(post, {**good, "criterion:polite": "pass"})
        assert status == 400 and "no criterion &#39;polite&#39;" in body
        assert "its criteria: correct, terse" in body
        status, body = _request(post, {**good, "criterion:terse": "", "note:terse": "hm"})
        assert status == 400 and "criterion &#39;terse&#39; has a note but no pass or fail" in body
        status, body = _request(post, {**good, "passed": "maybe"})
        assert status == 400 and "choose pass or fail for the trial" in body
        assert _labels(judged["db"]) == before

        # The same form with the token is stored (and answered with a redirect).
        status, body = _request(post, {**good, "criterion:terse": "fail", "note:terse": "long"})
        assert status == 200 and "<td>bo</td>" in body and "criterion terse" in body
        assert _labels(judged["db"])[len(before) :] == [
            (trial["id"], "", 1, "bo", "", "viewer"),
            (trial["id"], "terse", 0, "bo", "long", "viewer"),
        ]
        # The trials page counts labels of the trial and filters by them.
        listing = f"http://127.0.0.1:{port}/run/{judged['run']}/trials?labelled="
        assert f'href="/trial/{trial["id"]}"' in _request(listing + "yes")[1]
        assert f'href="/trial/{trial["id"]}"' not in _request(listing + "no")[1]
        # The run's report (cached by the server) counts the new label at once.
        assert _report_labelled(f"http://127.0.0.1:{port}/run/{judged['run']}/report") == (
            judged_n + 1
        )
        assert _progress(f"http://127.0.0.1:{port}/run/{judged['run']}") == progress + 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    # A labels file follows the same rule: bo's newer label replaces the viewer's one.
    path = judged["db"].with_name("bo.jsonl")
    path.write_text(json.dumps({"trial": trial["id"], "passed": False, "note": "on reflection"}))
    out = run_cli("label", judged["run"], str(path), "--labeller", "bo", "--store", judged["url"])
    assert out.returncode == 0, out.stderr
    mine = [x for x in _labels(judged["db"]) if x[3] == "bo"]
    assert mine == [
        (trial["id"], "terse", 0, "bo", "long", "viewer"),
        (trial["id"], "", 0, "bo", "on reflection", "file:bo.jsonl"),
    ]
    assert (trial["id"], "", 1, "bo") in _replaced(judged["db"])


@pytest.fixture(params=["sqlite", "postgres"])
def one_store(request, judged) -> tuple[str, int, str]:
    """(store URL, trial id, a labeller's name) of the judged run's fourth trial: in its
    SQLite store, or in a PostgreSQL store the run was imported into (export, import-log)."""
    who = f"cy-{request.param}"
    if request.param == "sqlite":
        return judged["url"], judged["trials"][3]["id"], who
    url = request.getfixturevalue("postgres_url")
    log = judged["db"].with_name("for-postgres.jsonl")
    out = run_cli("export", judged["run"], "-o", str(log), "--store", judged["url"])
    assert out.returncode == 0, out.stderr
    out = run_cli("import-log", str(log), "--store", url)
    assert out.returncode == 0, out.stderr
    from harness.store import Store

    store = Store(url)
    try:
        t = judged["trials"][3]
        ids = [x.id for x in store.trials(judged["run"]) if x.task_id == t["task_id"]]
        match = [x for x in store.trials(judged["run"]) if x.id in ids and x.arm == t["arm"]]
    finally:
        store.close()
    return url, int(match[0].id), who


def _count(url: str, table: str, trial_id: int, labeller: str) -> list[tuple[Any, ...]]:
    from sqlalchemy import text

    from harness.store import Store

    store = Store(url)
    try:
        with store.engine.connect() as conn:
            sql = f"SELECT criterion, passed FROM {table} WHERE trial_id = :t AND labeller = :w"
            return [tuple(r) for r in conn.execute(text(sql), {"t": trial_id, "w": labeller})]
    finally:
        store.close()


def test_concurrent_posts_of_one_person_keep_one_label_in_force(one_store) -> None:
    """Twelve posts at once (a double click, many tabs, two viewers on one store) of one
    person's label of one trial: every one is stored, one in force, the others as history;
    on SQLite and on PostgreSQL."""
    from concurrent.futures import ThreadPoolExecutor

    url, trial_id, who = one_store
    servers = [_Served(url), _Served(url)]
    try:
        pages = [f"{s.url}/trial/{trial_id}" for s in servers]
        tokens = [re.search(r'name="token" value="([^"]+)"', _request(p)[1]) for p in pages]

        def post(k: int) -> tuple[int, str]:
            token = tokens[k % 2]
            assert token is not None
            form = {"token": token.group(1), "labeller": who, "passed": "pass", "note": f"{k}"}
            return _request(pages[k % 2] + "/label", form)

        with ThreadPoolExecutor(12) as pool:
            statuses = list(pool.map(post, range(12)))
    finally:
        for s in servers:
            s.close()
    bad = [re.findall(r"\w*Error: .{0,300}", body) for status, body in statuses if status != 200]
    assert bad == []  # each answered by the redirect to the trial page
    assert _count(url, "human_labels", trial_id, who) == [("", True)]
    assert len(_count(url, "human_labels_replaced", trial_id, who)) == 11


def test_the_labeller_cookie_keeps_any_name(judged) -> None:
    """A name with spaces and non-ASCII letters comes back from the cookie as typed."""
    import http.client

    trial = judged["trials"][4]
    served = _Served(judged["url"])
    try:
        host, port = served.server.server_address[:2]
        page = f"/trial/{trial['id']}"
        token = re.search(r'name="token" value="([^"]+)"', _request(served.url + page)[1])
        assert token is not None
        name = "Zoë Ng; <o'brien>"
        form = {"token": token.group(1), "labeller": name, "passed": "fail"}
        conn = http.client.HTTPConnection(str(host), int(port), timeout=30)
        conn.request(
            "POST",
            page + "/label",
            urllib.parse.urlencode(form),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        r = conn.getresponse()
        r.read()
        assert r.status == 303 and r.getheader("Location") == f"{page}#labels"
        cookie = r.getheader("Set-Cookie") or ""
        assert "SameSite=Strict" in cookie and "HttpOnly" in cookie
        _, html = _request(served.url + page, Cookie=cookie.split(";")[0])
        assert 'value="Zoë Ng; &lt;o&#39;brien&gt;"' in html  # prefilled, escaped
        assert "<td>Zoë Ng; &lt;o&#39;brien&gt;</td>" in html  # the stored label
    finally:
        served.close()
