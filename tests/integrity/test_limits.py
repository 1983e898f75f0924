"""The red team against the harness's limits and its text handling (issue 22, classes 6 and
7), in one `harness run` per isolated backend (Docker and bubblewrap), through the real CLI,
next to oracle trials on the shipped ``shell`` tasks (state diff and hidden tests):

- ``flood``: a program printing 512 MiB on stdout and 512 MiB on stderr in each of its trials.
  The harness's peak RSS stays bounded (it took 947 MB for 300 MB before) and the store
  small; the program's last line still reaches the harness.
- ``fill_disk``: a program filling its work dir and ``/tmp``. It gets ENOSPC at its quota
  (``limits.disk``) and fails alone: every oracle trial of the run passes. On bwrap the
  trials' directories share one small filesystem, as on a full host disk.
- ``bad_name``: file names that are not UTF-8, made through the shell environment's own
  ``bash`` tool; ``surrogate_answer``: an answer with a lone surrogate (the agent's
  failure ``invalid_agent_result``); ``surrogate_say``: a message with lone surrogates and
  NUL. Each is stored (exactly: read back through the store) and never crashes the run.

After the run: `--resume` of it exits 0 and runs nothing; `report` and `export` print
every trial; nothing is left (containers, mounts, trial directories).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from harness.store import Store
from tests.conftest import REPO, require_docker, run_cli
from tests.integrity.limits_probes import COMMANDS, FLOOD_BYTES
from tests.integrity.test_bwrap_sandbox import require_bwrap

TASKS = ("shell/config-port", "shell/fix-mean", "shell/backup-script")
DISK = 64 << 20
RSS_BOUND_MIB = 400
TEXT_PROBES = ("bad_name", "surrogate_answer", "surrogate_say")


def _require_root() -> None:
    if os.geteuid() != 0:  # the disk quota needs a tmpfs the harness mounts
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but not root: the disk quota cannot be tested", pytrace=False)
        pytest.skip("the disk quota is enforced only when the harness runs as root")


def _suite(tmp_path: Path, backend: str, base_dir: Path | None) -> Path:
    arms = [{"name": "oracle", "agent": "oracle"}]
    arms += [
        {"name": name, "agent": "command", "params": {"command": cmd, "where": "sandbox"}}
        for name, cmd in COMMANDS.items()
    ]
    arms += [
        {
            "name": probe,
            "agent": "tests.integrity.limits_probes:TextProbe",
            "params": {"probe": probe},
        }
        for probe in TEXT_PROBES
    ]
    suite = {
        "name": f"limits-{backend}",
        "tasks": [str(REPO / "tasks/shell/tasks.yaml")],
        "environments_dir": str(REPO / "environments"),
        "sandbox": backend,
        "sandbox_options": {"base_dir": str(base_dir)} if base_dir else {},
        "concurrency": 6,
        "trials": 1,
        "arms": arms,
        "budgets": {"timeout_s": 600},
        "limits": {"memory": "512m", "pids": 128, "cpus": 1.0, "disk": str(DISK)},
        "retries": {"max_attempts": 2, "backoff_s": 0.1},
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _run_measured(tmp_path: Path, *args: str) -> tuple[int, str, int, int]:
    """`harness ARGS` in a subprocess: (exit code, stderr, peak RSS in MiB of the harness
    process or any process it started on the host, its pid)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HARNESS_STORE", None)
    err = tmp_path / "stderr.txt"
    with open(os.devnull, "wb") as out, open(err, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", *args],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=fh,
        )
        peak = _PeakRss(proc.pid)
        proc.wait()
        peak.stop()
    return proc.returncode, err.read_text(errors="backslashreplace"), peak.mib, proc.pid


class _PeakRss:
    """The largest VmHWM of a process tree, sampled every 50 ms while it runs.

    Not ``wait4``'s ``ru_maxrss``: a child made by vfork/exec inherits its parent's high-water
    mark, so a pytest process grown to 900 MiB over a long session reported 900 MiB for a
    harness that never held 150. VmHWM belongs to the process's own address space."""

    def __init__(self, pid: int) -> None:
        self.root, self.kib, self._done = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    @property
    def mib(self) -> int:
        return self.kib // 1024

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(0.05):
            for pid in _tree(self.root):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.kib = max(self.kib, int(line.split()[1]))


def _tree(root: int) -> list[int]:
    """``root`` and every descendant still alive."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return found


def _mounts_under(prefix: str) -> list[str]:
    with open("/proc/mounts") as fh:
        return [line.split()[1] for line in fh if line.split()[1].startswith(prefix)]


def _limits_red_team(tmp_path: Path, backend: str) -> None:
    _require_root()
    base_dir = None
    if backend == "bwrap":
        # The trials' directories share one small filesystem, as on a host whose disk is
        # nearly full: without a quota of its own, the filler takes the others' space too.
        base_dir = tmp_path / "shared-disk"
        base_dir.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(base_dir)], check=True
        )
    db = tmp_path / "r.db"
    suite = _suite(tmp_path, backend, base_dir)
    try:
        code, stderr, peak_mib, pid = _run_measured(
            tmp_path, "run", str(suite), "--store", f"sqlite:///{db}", "-q", *_task_args()
        )
        assert code == 0, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
        store = Store(f"sqlite:///{db}")
        run_id = store.latest_run().id
        trials = store.trials(run_id)
        assert len(trials) == len(TASKS) * (len(COMMANDS) + len(TEXT_PROBES) + 1)
        by_arm: dict[str, list] = {}
        for t in trials:
            by_arm.setdefault(t.arm, []).append(t)
        wrong = [
            f"{t.arm} × {t.task_id}: {t.status} after {t.attempts} ({t.reason[:200]})"
            for t in trials
            if t.attempts != 1 or t.status != ("passed" if t.arm == "oracle" else "failed")
        ]
        assert not wrong, "wrong verdicts:\n" + "\n".join(wrong)

        # flood: bounded memory, small store, the cut said, the last line kept
        print(f"\n{backend}: harness peak RSS {peak_mib} MiB, 1 GiB printed per flood trial")
        assert peak_mib < RSS_BOUND_MIB, f"harness peak RSS {peak_mib} MiB"
        for t in by_arm["flood"]:
            assert t.failure_kind is None and t.answer == "flood-done", t.reason  # last line kept
            run = next(e for e in store.events(t.id) if e.tool == "agent")
            assert (run.args or {})["output_dropped"] >= 2 * FLOOD_BYTES - (2 << 20), run.args
        assert db.stat().st_size < 64 << 20, f"store {db.stat().st_size} bytes"

        # fill_disk: ENOSPC at the quota, in its own sandbox only
        for t in by_arm["fill_disk"]:
            content = "".join(e.content or "" for e in store.events(t.id))
            assert "No space left on device" in content, content[-1000:]
            copied = [int(n) for n in re.findall(r"(\d+) bytes .* copied", content)]
            assert sum(copied) <= DISK, copied

        # text: stored exactly, read back through the store
        names = " ".join(t.reason for t in by_arm["bad_name"])
        # names that are not UTF-8 are named with \xNN escapes (harness.sandbox.workproduct)
        assert "etc/\\xff\\xfe.conf" in names and "app/caf\\xe9.py" in names, names[:500]
        for t in by_arm["surrogate_answer"]:
            assert t.failure_kind == "invalid_agent_result" and "lone surrogate" in t.reason
        for t in by_arm["surrogate_say"]:
            said = [e.content for e in store.events(t.id) if e.kind == "message"]
            assert "I did it \udcff\ud800 \x00 really" in said, said
        store.close()

        # --resume of the finished run: nothing to run, nothing crashes
        resumed = run_cli("run", "--resume", run_id, "--store", f"sqlite:///{db}", "-q")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert "Traceback" not in resumed.stderr
        for args in (("report", run_id), ("export", run_id, "-o", str(tmp_path / "e.jsonl"))):
            done = run_cli(*args, "--store", f"sqlite:///{db}")
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        lines = (tmp_path / "e.jsonl").read_text(encoding="ascii").splitlines()
        assert sum(json.loads(line)["type"] == "trial" for line in lines) == len(trials)

        # nothing left
        assert _mounts_under(f"/tmp/harness-quota-{pid}-") == []
        if base_dir is not None:
            assert _mounts_under(str(base_dir) + "/") == []
            assert list(base_dir.iterdir()) == []
        if backend == "docker":
            left = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label=harness.run={run_id}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            assert left == []
    finally:
        if base_dir is not None:
            subprocess.run(["umount", "-l", str(base_dir)], check=False)


def _task_args() -> list[str]:
    return [arg for task in TASKS for arg in ("--task", task)]


def test_limits_red_team_on_bwrap(tmp_path):
    require_bwrap()
    _limits_red_team(tmp_path, "bwrap")


@pytest.mark.usefixtures("docker_ready")
def test_limits_red_team_on_docker(tmp_path):
    require_docker()
    _limits_red_team(tmp_path, "docker")
