"""`harness validate --judge-checks RUN` on a judge that explores the agent's work dir with
tools: the trial keeps its work archive in the store, and the checks ask the judge again
over that archive through the same read-only tools (a real sandbox, a scripted judge)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import run_cli
from tests.fakes.exploring_judge import exploring_judge
from tests.fakes.openai_server import FakeOpenAI
from tests.graders.test_judge_tools import _suite


def test_a_workspace_judge_is_asked_again_over_the_kept_archive(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    with FakeOpenAI(default=exploring_judge) as server:
        suite = _suite(tmp_path, server.base_url, "chat", ["right", "wrong"], "unsafe-local")
        out = run_cli("run", str(suite), "--store", url, "-q")
        assert out.returncode in (0, 1), out.stderr[-2000:]
        ran = len(server.model_requests())
        out = run_cli("validate", str(suite), "--judge-checks", "latest", "--store", url, "--json")
        assert out.returncode == 0, out.stderr
        # Every check listed the work dir and read answer.txt again before it answered.
        asked = server.model_requests()[ran:]
        # The archive travels in a JSON-lines export: another store checks the same way.
        log, copy = tmp_path / "run.jsonl", f"sqlite:///{tmp_path / 'copy.db'}"
        assert run_cli("export", "latest", "-o", str(log), "--store", url).returncode == 0
        assert run_cli("import-log", str(log), "--store", copy).returncode == 0
        again = run_cli("validate", str(suite), "--judge-checks", "latest", "--store", copy,
                        "--json")  # fmt: skip
        assert again.returncode == 0, again.stderr
        moved = json.loads(again.stdout)
        assert moved["skipped"] == {} and moved["checks"] == json.loads(out.stdout)["checks"]
    summary = json.loads(out.stdout)
    assert summary["skipped"] == {}
    for name in ("repeat", "length", "position"):
        # 'right' passes and 'wrong' fails again: the judge read the same files.
        assert summary["checks"][name]["n"] == 2 and summary["checks"][name]["moved"] == 0
    assert summary["judge_usage"]["calls"] == len(asked) == 3 * 2 * 3
    assert sum(bool(p.json.get("tools")) for p in asked) == len(asked)

    # The archive is in the store beside the trial (blob named by the trial's evidence).
    con = sqlite3.connect(db)
    for (evidence,) in con.execute("select evidence from trials"):
        kept = json.loads(evidence)["work_archive"]
        assert kept["blob"] and kept["bytes"] > 0 and kept["workdir"]
        (size,) = con.execute(
            "select length(data) from blobs where sha256 = ?", (kept["blob"],)
        ).fetchone()
        assert size == kept["bytes"]

    # A trial without its archive (graded before archives were kept) is skipped and counted.
    con.execute("update trials set evidence = json_remove(evidence, '$.work_archive')")
    con.commit()
    out = run_cli("validate", str(suite), "--judge-checks", "latest", "--store", url, "--json")
    assert out.returncode == 0, out.stderr
    skipped = json.loads(out.stdout)["skipped"]
    assert list(skipped.values()) == [2] and "no work archive" in next(iter(skipped))
