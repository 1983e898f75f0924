"""Harbor tasks on ``bwrap``: their tests write the reward to ``/logs/verifier``, which a
bwrap sandbox's read-only root cannot hold, so every trial (the oracle's too) failed with
"the tests wrote no reward" and the run exited 0. They are refused when the suite loads,
in one line naming the task and the field."""

from __future__ import annotations

from pathlib import Path

import yaml

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


def test_a_reward_file_in_the_work_dir_is_not_refused_on_bwrap(tmp_path: Path) -> None:
    """A relative ``reward_file`` lies in the work dir, which bwrap lets tests write: the
    suite loads and runs (it was refused as 'outside the work dir'); one that climbs out of
    it with ``..`` is still refused."""
    from tests.core.test_multistep import _suite

    suite = _suite(tmp_path)
    doc = yaml.safe_load(suite.read_text())
    doc.update(sandbox="bwrap", sandbox_options={"base_dir": str(tmp_path / "trials")})
    (tmp_path / "trials").mkdir()
    suite.write_text(yaml.safe_dump(doc))
    ran = run_cli("run", str(suite), "-q", "--arm", "oracle", "--task", "all", "--store",
                  f"sqlite:///{tmp_path}/r.db")  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-1500:] + ran.stderr[-1500:]
    tasks = tmp_path / "tasks" / "tasks.yaml"
    tasks.write_text(tasks.read_text().replace("reward_file: reward.txt", "reward_file: ../r.txt"))
    refused = run_cli("run", str(suite), "-q", "--store", f"sqlite:///{tmp_path}/s.db")
    assert refused.returncode == 2 and "../r.txt, outside the work dir" in refused.stderr
