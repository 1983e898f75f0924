"""Harbor tasks on ``bwrap``: their tests write the reward to ``/logs/verifier``, which a
bwrap sandbox's read-only root cannot hold, so every trial (the oracle's too) failed with
"the tests wrote no reward" and the run exited 0. They are refused when the suite loads,
in one line naming the task and the field."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, run_cli


def test_harbor_tasks_are_refused_on_bwrap(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert (
        run_cli(
            "import", "harbor", str(REPO / "tasks/harbor-examples"), "--out", str(out)
        ).returncode
        == 0
    )
    suite = out / "tasks/harbor/suite.yaml"
    result = run_cli(
        "run", str(suite), "--sandbox", "bwrap", "-q", "--store", f"sqlite:///{tmp_path}/r.db"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert "graders[0].reward_file" in line and "/logs/verifier/reward.txt" in line, line
    assert "use `--sandbox docker`" in line, line
    assert not (tmp_path / "r.db").exists()  # refused before any run was recorded
