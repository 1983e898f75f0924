"""`harness export --format jsonl` then `harness import-log` loses nothing: exporting the
imported run again gives the same bytes, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.export.jsonl import import_jsonl, write_jsonl
from harness.store import Store
from tests.conftest import run_cli
from tests.fixtures.sample_store import build_sample_store


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, str, str]:
    root = tmp_path_factory.mktemp("export")
    db = root / "source.db"
    run_id = build_sample_store(db, tasks=12, trials=3, detailed_tasks=12)
    # an attempt of a trial that never got a final row (an interrupted one)
    con = sqlite3.connect(db)
    con.execute(
        "insert into attempts (run_id, arm, task_id, variant, trial_index, attempt, outcome, "
        "error, started_at, finished_at) values (?, 'baseline', 'shop/task-00000', '', 99, 1, "
        "'interrupted', null, '2026-01-01 00:00:00.000000', '2026-01-01 00:00:01.000000')",
        (run_id,),
    )
    con.commit()
    first = con.execute("select min(id) from trials").fetchone()[0]
    con.close()
    # a person's label, then their newer one (the first kept as history)
    for passed, note in ((True, "looks right"), (False, "on a second look, wrong")):
        labels = root / "labels.jsonl"
        labels.write_text(json.dumps({"trial": first, "passed": passed, "note": note}) + "\n")
        done = run_cli(
            "label", run_id, str(labels), "--labeller", "ann", "--store", f"sqlite:///{db}"
        )
        assert done.returncode == 0, done.stderr
    _judge_one_pair(db, run_id)
    out = root / "run.jsonl"
    result = run_cli(
        "export", run_id, "--format", "jsonl", "-o", str(out), "--store", f"sqlite:///{db}"
    )
    assert result.returncode == 0, result.stderr
    return out, run_id, f"sqlite:///{db}"


def _judge_one_pair(db: Path, run_id: str) -> None:
    """Two pairwise judgements (both orders) of the first task's first trials of the two arms."""
    from harness.store import now
    from harness.store.pairwise import put_judgement
    from harness.store.tables import PairwiseJudgement

    store = Store(f"sqlite:///{db}")
    try:
        trials = store.trials(run_id)
        a = next(t for t in trials if t.arm == "baseline")
        b = next(
            t
            for t in trials
            if t.arm != "baseline" and (t.task_id, t.trial_index) == (a.task_id, a.trial_index)
        )
        for first, verdict in (("A", "B"), ("B", "tie")):
            put_judgement(
                store.engine,
                PairwiseJudgement(
                    run_id=run_id,
                    setup="sha256:0123456789abcdef",
                    judge_model="judge-m",
                    arm_a=a.arm,
                    arm_b=b.arm,
                    task_id=a.task_id,
                    variant=a.variant,
                    trial_index=a.trial_index,
                    trial_a=a.id,
                    trial_b=b.id,
                    shown_first=first,
                    verdict=verdict,
                    reason="é: the other one adds up",
                    tokens_in=500,
                    tokens_out=30,
                    cost_usd=0.00062,
                    latency_s=0.25,
                    judged_at=now(),
                ),
            )
    finally:
        store.close()


def _again(url: str, run_id: str) -> str:
    store = Store(url)
    try:
        buf = io.StringIO()
        write_jsonl(store, run_id, buf)
        return buf.getvalue()
    finally:
        store.close()


def test_file_shape(exported) -> None:
    path, run_id, _ = exported
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["version"] == 1
    assert lines[0]["run"]["id"] == run_id
    trials = [x for x in lines if x["type"] == "trial"]
    assert lines[-1] == {"type": "end", "trials": len(trials)}
    assert any(x["type"] == "attempts" for x in lines)
    (judged,) = [x for x in lines if x["type"] == "pairwise"]
    assert [(j["shown_first"], j["verdict"]) for j in judged["judgements"]] == [
        ("A", "B"),
        ("B", "tie"),
    ]
    assert not {"id", "run_id", "trial_a", "trial_b"} & set(judged["judgements"][0])
    with_events = [t for t in trials if t["events"]]
    assert with_events and any(t["blobs"] for t in trials)
    assert all("reasons" in g for t in with_events for g in t["trial"]["evidence"]["graders"])
    labelled = [t for t in trials if t["labels"]]
    assert [x["note"] for t in labelled for x in t["labels"]] == ["on a second look, wrong"]
    assert [x["note"] for t in labelled for x in t["replaced_labels"]] == ["looks right"]
    assert (
        labelled[0]["replaced_labels"][0]["replaced_at"] == labelled[0]["labels"][0]["labelled_at"]
    )


def test_roundtrip_sqlite_via_cli(exported, tmp_path) -> None:
    path, run_id, _ = exported
    url = f"sqlite:///{tmp_path / 'copy.db'}"
    result = run_cli("import-log", str(path), "--store", url)
    assert result.returncode == 0, result.stderr
    assert _again(url, run_id) == path.read_text()
    again = run_cli("import-log", str(path), "--store", url)  # the run is there already
    assert again.returncode == 2 and "already holds run" in again.stderr
    assert again.stderr.count("\n") == 1


def test_roundtrip_postgres(exported, postgres_url) -> None:
    path, run_id, _ = exported
    store = Store(postgres_url)
    try:
        got = import_jsonl(store, path)
        assert (got.run_id, got.trials) == (run_id, path.read_text().count('"type": "trial"'))
    finally:
        store.close()
    assert _again(postgres_url, run_id) == path.read_text()


def test_truncated_or_foreign_file_is_one_line_error(exported, tmp_path) -> None:
    path, _, _ = exported
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    result = run_cli("import-log", str(cut), "--store", f"sqlite:///{tmp_path / 'a.db'}")
    assert result.returncode == 2 and "truncated" in result.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": "something-else"}\n')
    result = run_cli("import-log", str(other), "--store", f"sqlite:///{tmp_path / 'b.db'}")
    assert result.returncode == 2 and "not a harness-run-log file" in result.stderr


def test_inspect_logs_are_listed_and_read_by_inspect(exported, tmp_path) -> None:
    """`-o DIR` writes logs `inspect view --log-dir DIR` lists (through Inspect's own
    listing), the message names exactly those files, and each reads back with its trials."""
    _, run_id, url = exported
    if os.environ.get("CI") != "true":
        pytest.importorskip("inspect_ai")
    from inspect_ai.log import list_eval_logs, read_eval_log

    logs = tmp_path / "logs"
    result = run_cli("export", run_id, "--format", "inspect", "-o", str(logs), "--store", url)
    assert result.returncode == 0, result.stderr
    listed = sorted(Path(info.name.removeprefix("file://")) for info in list_eval_logs(str(logs)))
    lines = result.stderr.splitlines()[1:-1]  # per arm 'ARM (N trials):', then the file's name
    named = sorted(logs / line.strip() for line in lines if line.startswith("    "))
    assert listed == named == sorted(logs.iterdir()), result.stderr
    assert f"inspect view --log-dir {logs}" in result.stderr
    infos = list_eval_logs(str(logs))
    assert {i.task for i in infos} == {"sample"} and all(i.task_id for i in infos)
    store = Store(url)
    try:
        trials = store.trials(run_id)
    finally:
        store.close()
    arms = sorted({t.arm for t in trials})
    by_arm = {read_eval_log(str(p)).eval.metadata["harness_arm"]: p for p in listed}
    assert sorted(by_arm) == arms
    for arm in arms:
        log = read_eval_log(str(by_arm[arm]))
        mine = [t for t in trials if t.arm == arm]
        assert log.samples is not None and len(log.samples) == len(mine)
        by_key = {(s.id, s.epoch): s for s in log.samples}
        for t in mine:
            sample = by_key[(t.task_id, t.trial_index + 1)]
            if t.passed is None:
                assert not sample.scores and sample.error is not None
            else:
                assert sample.scores["harness"].value == ("C" if t.passed else "I")
            usage = next(iter(sample.model_usage.values()))
            assert (usage.input_tokens, usage.output_tokens) == (t.tokens_in, t.tokens_out)
        resolved = [t for t in mine if t.passed is not None]
        accuracy = log.results.scores[0].metrics["accuracy"].value
        assert accuracy == pytest.approx(sum(bool(t.passed) for t in resolved) / len(resolved))

    # Again: the same names (rewritten, not added to); RUN:ARM writes that arm's log only.
    again = run_cli("export", run_id, "--format", "inspect", "-o", str(logs), "--store", url)
    assert again.returncode == 0 and sorted(logs.iterdir()) == listed
    one = tmp_path / "one"
    single = run_cli(
        "export", f"{run_id}:candidate", "--format", "inspect", "-o", str(one), "--store", url
    )
    assert single.returncode == 0, single.stderr
    [only] = list_eval_logs(str(one))
    assert read_eval_log(only.name).eval.metadata["harness_arm"] == "candidate"


def test_inspect_export_to_a_file_name_is_refused(exported, tmp_path) -> None:
    _, run_id, url = exported
    out = tmp_path / "inspect.json"
    result = run_cli("export", run_id, "--format", "inspect", "-o", str(out), "--store", url)
    assert result.returncode == 2 and "log directory" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not out.exists()


def test_malformed_line_names_line_and_field(exported, tmp_path) -> None:
    path, _, _ = exported
    lines = path.read_text().splitlines(keepends=True)
    bad = json.loads(lines[1])
    bad["events"] = [1]
    broken = tmp_path / "bad.jsonl"
    broken.write_text(lines[0] + json.dumps(bad) + "\n" + lines[-1])
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with pytest.raises(ConfigError, match=r"bad\.jsonl:2: field 'events\.0': input should"):
            import_jsonl(store, broken)
    finally:
        store.close()
