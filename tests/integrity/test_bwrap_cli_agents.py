"""Claude Code, Codex CLI and a ``command`` program with ``where: sandbox``, inside bwrap.

The same scripted upstream and suite as the Docker test (``tests/docker/test_docker_cli_agents``),
run with ``--sandbox bwrap``: each CLI and the command program with a correct and a wrong
model script. The model's tool call edits the file and prints what the CLI's process sees:
its hostname, a host file outside the sandbox, ``/run/harness`` and its environment. Checks:
the correct script passes and the wrong one fails on the grader's verdict; tokens and cost
equal the script's usage × prices; a token budget stops both CLIs as the agent's failure; the
CLI ran inside the sandbox (hostname ``sandbox``, the host file unreadable, the staged
executable bound at the path Docker uses) and reached the proxy only through its socket; the
real key reaches the upstream and never the sandbox; `harness lock` pins each CLI by npm spec
and the SHA-256 of the executable.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import yaml

from tests.conftest import run_cli
from tests.docker.test_docker_cli_agents import (
    CACHED,
    EDITS,
    KEY,
    KEY_ENV,
    USAGE,
    _answered,
    _suite,
    check_metered,
    check_proxy_only,
    cli_builds,  # noqa: F401  (autouse: the CLIs are staged or npm can fetch them)
    marked,
    trial_rows,
)
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, Turn
from tests.integrity.test_bwrap_sandbox import bwrap_ready  # noqa: F401

SECRET = f"host-only-{uuid.uuid4().hex}"

# The command arm's program: one chat call through the relay, then the edit the reply names.
PROGRAM = r"""
import json, os, re, subprocess, urllib.request
body = {"model": "any", "messages": [{"role": "user", "content": os.environ["HARNESS_INSTRUCTION"]}]}
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"},
)
reply = json.load(urllib.request.urlopen(req, timeout=30))["choices"][0]["message"]["content"]
port = re.search(r"port is (\d+)", reply).group(1)
subprocess.run(["sed", "-i", f"s/^port=.*/port={port}/", "etc/app.conf"], check=True)
print(reply)
"""


def _script(secret: Path):
    def script(req: RecordedRequest) -> Turn:
        body = req.json or {}
        value = EDITS["wrong" if str(body.get("model", "")).endswith("wrong") else "right"]
        usage = {"usage": USAGE, "cached": CACHED}
        if _answered(req) or not body.get("tools"):
            return Turn(f"Done: port is {value}.", **usage)
        # RUN""HARNESS etc.: the markers appear joined only in the command's output.
        edit = (
            f"sed -i 's/^port=.*/port={value}/' etc/app.conf && env && "
            'echo SEEN""HOST=$(hostname) && '
            f'echo SEEN""FILE=$(cat {secret} 2>/dev/null || echo unreadable) && '
            "echo RUN\"\"HARNESS=$(ls -A /run/harness | tr '\\n' ,) && "
            'echo AGENT""DIR=$(ls /opt/harness/agents | tr "\\n" ,)'
        )
        tool = ("Bash", {"command": edit, "description": "edit"})
        if req.path.rstrip("/").endswith("/responses"):
            tool = ("exec_command", {"cmd": edit})
        return Turn(tool_calls=[tool], **usage)

    return script


def _bwrap_suite(tmp: Path, base_url: str) -> Path:
    path = _suite(tmp, base_url)
    doc = yaml.safe_load(path.read_text())
    doc.update(sandbox="bwrap", concurrency=3)
    for which in ("right", "wrong"):
        model = {**doc["arms"][2]["model"], "name": f"fake-{which}"}  # codex's: api openai
        doc["arms"].append(
            {
                "name": f"command-{which}",
                "agent": "command",
                "model": model,
                "params": {
                    "command": 'python3 -c "$PROG"',
                    "where": "sandbox",
                    "env": {"PROG": PROGRAM},
                },
            }
        )
    path.write_text(yaml.safe_dump(doc))
    return path


def test_cli_agents_run_inside_bwrap_through_the_proxy(tmp_path, bwrap_ready):  # noqa: F811
    secret = tmp_path / "host-secret"
    secret.write_text(SECRET)
    with FakeOpenAI(default=_script(secret)) as server:
        suite = _bwrap_suite(tmp_path, server.base_url)
        db = tmp_path / "cli.db"
        result = run_cli(
            "run", str(suite), "--store", f"sqlite:///{db}", "-q", env={KEY_ENV: KEY}, timeout=300
        )
        requests = server.model_requests()
    assert result.returncode in (0, 1), result.stdout + result.stderr
    bodies = [r.body.decode("utf-8", "replace") for r in requests]
    # The CLIs' tool ran inside bwrap: its hostname, no host file, the proxy's socket only,
    # and the CLI bound read-only where Docker puts it.
    assert marked(bodies, "SEENHOST") == {"sandbox"}
    assert marked(bodies, "SEENFILE") == {"unreadable"}
    assert not any(SECRET in b for b in bodies)
    check_proxy_only(requests, bodies)
    assert {m.rstrip(",") for m in marked(bodies, "AGENTDIR")} <= {
        "claude-code-2.1.332",
        "codex-0.171.0",
    }
    assert any("HARNESS_SANDBOX_ID=bwrap-" in b for b in bodies)
    rows = trial_rows(db)
    assert len(rows) == 12
    for agent in ("claude-code", "codex", "command"):
        right = rows[(f"{agent}-right", "shell/config-port")]
        wrong = rows[(f"{agent}-wrong", "shell/config-port")]
        assert right["status"] == "passed", right["reason"]
        assert wrong["status"] == "failed" and "agent failure" not in wrong["reason"], wrong
        for row in (right, wrong):
            check_metered(row, min_calls=1 if agent == "command" else 2)
        if agent == "command":
            continue
        assert json.loads(right["evidence"])["info"]["cli"].startswith(
            "@anthropic-ai/claude-code@" if agent == "claude-code" else "@openai/codex@"
        )
        budget = rows[(f"{agent}-right", "shell/config-port-budget")]
        assert budget["status"] == "failed" and "max_tokens" in budget["reason"], budget
        assert budget["tokens_in"] == 2 * USAGE[0]
    _check_lock(suite, rows)


def _check_lock(suite: Path, rows: dict) -> None:
    """`harness lock` on bwrap pins each CLI by its npm spec and the SHA-256 of the staged
    executable the sandboxes bind; each CLI trial records the task's files plus that CLI as
    the image it ran, and the task's files alone as the image under it."""
    from harness.agents.cli_agents import ClaudeCodeAgent, CodexAgent
    from harness.agents.npm_stage import staged

    locked = run_cli("lock", str(suite), env={KEY_ENV: KEY})
    assert locked.returncode == 0, locked.stdout + locked.stderr
    entry = json.loads(suite.with_suffix(".lock.json").read_text())["environments"]["shell"]
    for cls in (ClaudeCodeAgent, CodexAgent):
        package = cls().package(cls.VERSION)
        exe = staged(package)
        assert exe is not None
        pin = entry["agents"][f"{cls.name}-{cls.VERSION}"]
        digest = hashlib.sha256(exe.read_bytes()).hexdigest()
        assert pin == {"npm": package.spec, "sha256": digest}
        ran = {r["image_id"] for (arm, _), r in rows.items() if arm.startswith(cls.name)}
        under = {r["task_image_id"] for (arm, _), r in rows.items() if arm.startswith(cls.name)}
        key = f"{cls.name}-{cls.VERSION}"
        assert under == {entry["image_id"]}
        assert ran == {f"{entry['image_id']}+{key}@sha256:{digest[:12]}"}
