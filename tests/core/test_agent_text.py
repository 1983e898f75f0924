"""Agent text that is not valid Unicode (lone surrogates, undecodable bytes, NUL) is stored
losslessly on SQLite and PostgreSQL, survives an export/import round trip byte for byte,
prints in every view, and a row the database still refuses never stops a run."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from harness import text
from harness.store import Run, Store, now
from harness.store.tables import AttemptRow, TrialRow
from harness.trajectory import Event
from tests.conftest import bare_run, run_cli

NAME = "etc/\udcff\udcfe.conf"  # a file name made of bytes 0xff 0xfe (surrogateescape)
HOSTILE = [
    "",
    "plain",
    NAME,
    "lone \ud800 high",
    "lone \udfff low",
    "nul \x00 inside",
    text.ESCAPED,
    text.ESCAPED + "looks escaped \\u0000",
    "back\\slash \\u0041 \\\\",
    "emoji 😀 and \ud83d alone",
]


def test_to_store_round_trips_and_keeps_valid_text_as_it_is():
    rng = random.Random(7)
    alphabet = ["a", "\\", "u", "0", "d", "\x00", "\ud800", "\udcff", "é", "😀", text.ESCAPED]
    samples = HOSTILE + ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(3000)]
    for s in samples:
        stored = text.to_store(s)
        assert text.from_store(stored) == s, repr(s)
        stored.encode("utf-8")  # valid Unicode, no NUL: both databases take it
        assert "\x00" not in stored
    for s in ("plain", "back\\slash \\u0041", "emoji 😀", "tab\tnew\nline"):
        assert text.to_store(s) == s  # what SQL users read is the text itself


def _rows(run_id: str) -> tuple[Run, TrialRow, list[AttemptRow], list[Event], dict[str, bytes]]:
    run = bare_run(run_id)
    evidence = {
        "graders": [{"grader": "state_diff", "reasons": [f"unexpected change at files.{NAME}"]}],
        "failure": None,
        "info": {NAME: "\ud800\x00"},
        "harms": [],
    }
    trial = TrialRow(
        run_id=run_id,
        arm="a",
        task_id="t",
        trial_index=0,
        seed=1,
        cluster="c",
        task_class="k",
        status="failed",
        passed=False,
        score=0.0,
        reason=" | ".join(HOSTILE),
        evidence=evidence,
        answer="answer \udcff\x00",
        failure_kind="kind \ud800",
        started_at=now(),
        finished_at=now(),
    )
    attempts = [
        AttemptRow(
            run_id=run_id,
            arm="a",
            task_id="t",
            trial_index=0,
            attempt=1,
            outcome="ok",
            error="err \udcff",
            started_at=now(),
            finished_at=now(),
        )
    ]
    events = [
        Event(step=i, kind="command", tool=f"tool {s}", args={"command": s}, content=s)
        for i, s in enumerate(HOSTILE)
    ]
    return run, trial, attempts, events, {"b" * 64: b"\xff\xfe\x00raw"}


def _write_and_check(url: str) -> str:
    store = Store(url)
    run_id = f"text-{uuid.uuid4().hex[:8]}"
    run, trial, attempts, events, blobs = _rows(run_id)
    store.create_run(run)
    tid = store.write_trial(trial, attempts, events, blobs)
    got = store.trial(tid)
    assert got is not None
    assert (got.reason, got.answer, got.failure_kind) == (
        trial.reason,
        trial.answer,
        trial.failure_kind,
    )
    assert got.evidence == trial.evidence
    assert [(e.tool, e.content, e.args) for e in store.events(tid)] == [
        (e.tool, e.content, e.args) for e in events
    ]
    assert [a.error for a in store.attempts(run_id)] == ["err \udcff"]
    assert store.blob("b" * 64) == b"\xff\xfe\x00raw"
    store.update_run(run_id, status="finished", finished_at=now())
    store.close()
    return run_id


def test_hostile_text_is_stored_losslessly_in_sqlite(tmp_path):
    _write_and_check(f"sqlite:///{tmp_path / 'h.db'}")


def test_hostile_text_is_stored_losslessly_in_postgres(postgres_url):
    _write_and_check(postgres_url)


def test_export_import_export_gives_the_same_bytes_and_every_view_prints(tmp_path, postgres_url):
    db = f"sqlite:///{tmp_path / 'h.db'}"
    run_id = _write_and_check(db)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    steps = [
        ("export", run_id, "--store", db, "-o", str(first)),
        ("import-log", str(first), "--store", postgres_url),
        ("export", run_id, "--store", postgres_url, "-o", str(second)),
    ]
    for args in steps:
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr[-2000:]
    assert first.read_bytes() == second.read_bytes()
    json.loads(first.read_text(encoding="ascii").splitlines()[1])  # ASCII JSON lines
    views = [
        ("report", run_id, "--store", db),
        ("report", run_id, "--store", db, "--markdown"),
        ("report", run_id, "--store", db, "--json"),
        ("html", run_id, "--store", db, "-o", str(tmp_path / "r.html")),
        ("export", run_id, "--store", db, "--format", "inspect", "-o", str(tmp_path / "inspect")),
    ]
    for args in views:
        done = run_cli(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)


def test_the_viewer_shows_the_trial_with_escapes(tmp_path):
    import urllib.request

    from harness.viewer.server import make_server

    db = f"sqlite:///{tmp_path / 'h.db'}"
    _write_and_check(db)
    server = make_server(db, 0)
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"{server.url}/trial/1") as reply:
            page = reply.read().decode("utf-8")
    finally:
        server.shutdown()
        server.server_close()
    assert "\\udcff" in page and "lone" in page


def test_a_row_the_database_refuses_is_stored_as_a_harness_error(tmp_path):
    """A value no database takes (NaN in JSON on PostgreSQL, a non-JSON object, a nesting
    too deep to serialise): the trial is stored as a harness_error saying why, and the
    writer goes on with the next trial instead of stopping the run."""
    from harness.orchestrator import RunOutcome
    from harness.store_writer import StoreWriter
    from harness.trial_rows import TrialRecord

    store = Store(f"sqlite:///{tmp_path / 'h.db'}")
    run, trial, attempts, events, blobs = _rows("bad")
    store.create_run(run)
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    bad = trial.model_copy(update={"evidence": {"info": deep}})
    good = trial.model_copy(update={"task_id": "t2"})
    writer = StoreWriter(store, "bad")
    writer.put(TrialRecord(bad, attempts, events, blobs))
    writer.put(TrialRecord(good, [], [], {}))
    outcome = RunOutcome(planned=2)
    outcome.counts["failed"] = 2  # as the workers counted them
    writer.close()
    outcome.recount(writer.degraded)
    assert writer.error is None
    rows = {t.task_id: t for t in store.trials("bad")}
    assert rows["t"].status == "harness_error" and rows["t"].passed is None
    assert "could not be stored (RecursionError" in rows["t"].reason
    assert rows["t2"].status == "failed" and rows["t2"].reason == trial.reason
    assert writer.degraded == [("failed", rows["t"].reason)]
    assert +outcome.counts == {"failed": 1, "harness_error": 1}  # the summary says what is stored
    assert store.finished_keys("bad") == {("a", "t", 0, ""), ("a", "t2", 0, "")}  # resume skips


@pytest.mark.parametrize("answer", ["x\ud800", "\udcff"])
def test_an_answer_that_is_not_text_is_the_agents_failure(answer):
    from harness import errors
    from harness.agents import AgentResult
    from harness.agents.base import validate_result

    with pytest.raises(errors.AgentFailure) as caught:
        validate_result(AgentResult(answer=answer))
    assert caught.value.reason == "invalid_agent_result"
    assert "lone surrogate" in str(caught.value)
