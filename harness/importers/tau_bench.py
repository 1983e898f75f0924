"""``harness import tau-bench PATH --domain retail|airline``: a tau-bench checkout in, an
environment and a suite out.

What is read from the checkout (never executed in this process): the task lists
(``envs/<domain>/tasks_<split>.py``, parsed as Python syntax, not imported), the domain's
tool modules and JSON data, its terminating tools (``env.py``), its policy (``wiki.md``).

What is written (under ``--out``):

- ``environments/tau-bench-<domain>/``: the domain's own tool modules and data with its
  license, the runner (``tau_runner.py``) serving them from memory as a tool server, the
  tool schemas as tau-bench declares them, the wiki as the policy;
- ``tasks/tau-bench-<domain>/tasks.yaml``: one task per tau-bench task. The user's
  instruction becomes the simulated user's private goal; the expected change is the data
  after replaying the gold actions exactly as tau-bench's reward does (every action but the
  terminating ones, failing ones included, on fresh data), written as a ``state_diff`` patch
  with ``strict_types``; the outputs become ``required_outputs`` in ``substring`` mode,
  searched only in what the agent said to the user (never its final answer alone); the
  gold actions are the oracle's solution; the cluster is the user;
- ``suite.yaml`` (an ``llm`` arm configured from environment variables) and
  ``check-suite.yaml`` (oracle and noop arms, a quick check of the import).
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import yaml
from pydantic import ValidationError

from graders._paths import ABSENT, apply_patch, strict_same
from harness.config.models import ToolSpec
from harness.errors import ConfigError
from harness.importers.tau_source import (
    TauAction,
    TauTask,
    data_tables,
    read_tasks,
    terminate_tools,
)
from harness.jsontypes import JSONObject

DOMAINS = ("retail", "airline")
SPLITS = ("test", "train", "dev")
RUNNER = Path(__file__).with_name("tau_runner.py")
SERVER = Path(__file__).parent.parent / "tools" / "server.py"
RUN = "python3 -S tau_runner.py"


class _StateGrader(TypedDict):
    type: Literal["state_diff"]
    strict_types: bool
    expected_patch: NotRequired[JSONObject]
    expect_no_change: NotRequired[bool]


class _OutputsGrader(TypedDict):
    type: Literal["required_outputs"]
    match: Literal["substring"]
    include_answer: Literal[False]
    outputs: list[str]


class _Goal(TypedDict):
    goal: str


class _Action(TypedDict):
    tool: str
    args: dict[str, object]


class _Solution(TypedDict):
    actions: list[_Action]
    answer: str


class TaskEntry(TypedDict):
    """One written task (the file's ``defaults`` supply its environment, class and user
    model; the loader then checks it as a ``Task``)."""

    id: str
    cluster: str
    user: _Goal
    graders: list[_StateGrader | _OutputsGrader]
    solution: _Solution


@dataclass
class Imported:
    environment: Path
    suite: Path
    check_suite: Path
    tasks: int
    with_outputs: int
    no_change: int


# ----------------------------------------------------------------------------- expected
def _identical(a: Any, b: Any, slow: bool = False) -> bool:
    """Same values of the same types: equal pickles (fast, C speed); with ``slow``, a
    strict walk when the pickles differ (key order, shared objects)."""
    if a != b:
        return False
    return pickle.dumps(a) == pickle.dumps(b) or (slow and strict_same(a, b))


def state_patch(before: JSONObject, after: JSONObject) -> JSONObject:
    """The patch Δ with ``before ⊕ Δ == after``: changed leaves, new keys, null for removed."""
    out: JSONObject = {}
    for key, value in after.items():
        old = before.get(key, ABSENT)
        if isinstance(old, dict) and isinstance(value, dict):
            if _identical(old, value):
                continue
            sub = state_patch(old, value)
            if sub:
                out[key] = sub
        elif not strict_same(old, value):
            out[key] = value
    for key in before:
        if key not in after:
            out[key] = None
    return out


def replay(env_files: Path, action_lists: list[list[TauAction]]) -> list[JSONObject]:
    """The data after each list of actions, each on fresh data, by the environment's runner
    (the same code the sandbox runs)."""
    lines = "".join(json.dumps(actions) + "\n" for actions in action_lists)
    proc = subprocess.run(
        [sys.executable, "-S", str(env_files / "tau_runner.py"), "replay"],
        input=lines,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ConfigError(
            str(env_files), "", f"replaying gold actions failed: {proc.stderr[-300:]}"
        )
    return [json.loads(line) for line in proc.stdout.splitlines()]


# ----------------------------------------------------------------------------- writing
def _copy_code(domain_dir: Path, checkout_pkg: Path, license_file: Path, files: Path) -> None:
    pkg = files / "tau_bench"
    (pkg / "envs" / domain_dir.name).mkdir(parents=True)
    for init in (pkg, pkg / "envs", pkg / "envs" / domain_dir.name):
        (init / "__init__.py").write_text("")  # theirs import the LLM user; not needed here
    shutil.copy2(checkout_pkg / "envs" / "tool.py", pkg / "envs" / "tool.py")
    shutil.copytree(
        domain_dir / "tools",
        pkg / "envs" / domain_dir.name / "tools",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    if license_file.is_file():
        shutil.copy2(license_file, pkg / "LICENSE")
    shutil.copy2(RUNNER, files / "tau_runner.py")
    shutil.copy2(SERVER, files / "tool_server.py")


def _tool_specs(files: Path, tools_module: str, ending: list[str]) -> list[JSONObject]:
    """Each tool's schema as the domain declares it (``get_info()``), read by the runner's
    Python so the domain's modules never load into the harness process."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import importlib; "
        "m = importlib.import_module(sys.argv[2]); "
        "print(json.dumps([c.get_info() for c in m.ALL_TOOLS]))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, str(files), tools_module],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ConfigError(tools_module, "ALL_TOOLS", f"cannot load the tools: {proc.stderr[-300:]}")
    specs = []
    for info in json.loads(proc.stdout):
        fn = info["function"]
        try:
            spec = ToolSpec(
                name=fn["name"],
                description=fn.get("description", ""),
                parameters=fn.get("parameters", {"type": "object", "properties": {}}),
                command=f"{RUN} call {fn['name']}",
            )
        except ValidationError as exc:
            raise ConfigError(tools_module, f"ALL_TOOLS: {fn.get('name')}", str(exc)) from None
        if spec.name in ending:
            spec.terminates = True
        # As the tool list of environment.yaml: the fields given, in the model's order.
        specs.append(spec.model_dump(exclude_unset=True))
    return specs


def _dump(path: Path, data: object, header: str = "") -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(header + text)


# long: it writes one import's files in sequence (environment, tasks, suite), each step a few lines.
def import_tau_bench(checkout: Path, domain: str, split: str, out: Path) -> Imported:
    """Write the environment and the suite of one domain and split; see the module doc."""
    if domain not in DOMAINS:
        raise ConfigError("--domain", "domain", f"unknown domain '{domain}' ({', '.join(DOMAINS)})")
    pkg = checkout / "tau_bench" if (checkout / "tau_bench").is_dir() else checkout
    domain_dir = pkg / "envs" / domain
    if not (domain_dir / "tools").is_dir():
        raise ConfigError(str(checkout), "", f"no tau-bench domain '{domain}' ({domain_dir})")
    tasks_file = domain_dir / f"tasks_{split}.py"
    if not tasks_file.is_file():
        raise ConfigError(str(tasks_file), "", f"domain '{domain}' has no '{split}' split")
    wiki = domain_dir / "wiki.md"
    if not wiki.is_file():
        raise ConfigError(str(wiki), "", "the domain's policy (wiki.md) is missing")

    name = f"tau-bench-{domain}"
    env_dir, task_dir = out / "environments" / name, out / "tasks" / name
    for d in (env_dir, task_dir):
        if d.exists():
            shutil.rmtree(d)
    files = env_dir / "files"
    files.mkdir(parents=True)
    task_dir.mkdir(parents=True)

    tables = data_tables(domain_dir / "data" / "__init__.py")
    (files / "data").mkdir()
    for _, filename in tables:
        shutil.copy2(domain_dir / "data" / filename, files / "data" / filename)
    _copy_code(domain_dir, pkg, checkout / "LICENSE", files)
    tools_module = f"tau_bench.envs.{domain}.tools"
    (files / "domain.json").write_text(
        json.dumps({"domain": domain, "tables": tables, "tools_module": tools_module})
    )
    ending = terminate_tools(domain_dir / "env.py")
    shutil.copy2(wiki, env_dir / "policy.md")
    _dump(
        env_dir / "environment.yaml",
        {
            "name": name,
            "description": f"tau-bench {domain}: its own tools and data, served from memory.",
            "version": "1",
            "image": {"ref": "harness-base:latest"},
            "workdir": "/work",
            "files": "files",
            "policy": "policy.md",
            "state": {"kind": "command", "command": f"{RUN} dump"},
            "tool_server": {"command": f"{RUN} serve"},
            "tools": _tool_specs(files, tools_module, ending),
        },
        "# Written by `harness import tau-bench`; the tools and data are tau-bench's (MIT,\n"
        "# files/tau_bench/LICENSE).\n",
    )

    tau_tasks = read_tasks(tasks_file)
    s0 = json.loads(
        subprocess.run(
            [sys.executable, "-S", str(files / "tau_runner.py"), "dump"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    gold_lists = [[a for a in t.actions if a["name"] not in ending] for t in tau_tasks]
    finals = replay(files, gold_lists)
    entries: list[TaskEntry] = []
    patches: list[JSONObject] = []
    no_change = 0
    for t, final in zip(tau_tasks, finals, strict=True):
        patch = state_patch(s0, final)
        if not _identical(apply_patch(s0, patch), final, slow=True):
            raise ConfigError(
                str(tasks_file),
                f"task {t.index}",
                "its expected change cannot be written as a patch (a null inside a new record)",
            )
        no_change += not patch
        patches.append(patch)
        entries.append(_task_entry(name, split, t, patch))
    _dump(
        task_dir / "tasks.yaml",
        {
            "defaults": {
                "environment": name,
                "class": name,
                "user": {
                    "model": {
                        "name": "${TAU_USER_MODEL:-gpt-4o}",
                        "base_url": "${TAU_USER_BASE_URL:-https://api.openai.com/v1}",
                        "api_key_env": "OPENAI_API_KEY",
                        "temperature": 0.0,
                    }
                },
            },
            "tasks": entries,
        },
        f"# tau-bench {domain} {split} split, written by `harness import tau-bench`.\n",
    )
    _verify_patches(task_dir / "tasks.yaml", entries, patches)
    suite, check = _write_suites(task_dir, name, split)
    return Imported(
        env_dir, suite, check, len(entries), sum(bool(t.outputs) for t in tau_tasks), no_change
    )


def _task_entry(name: str, split: str, t: TauTask, patch: JSONObject) -> TaskEntry:
    state: _StateGrader = {"type": "state_diff", "strict_types": True}
    if patch:
        state["expected_patch"] = patch
    else:
        state["expect_no_change"] = True
    graders: list[_StateGrader | _OutputsGrader] = [state]
    if t.outputs:
        # Counted only when said to the user, as tau-bench's reward reads them: the final
        # answer alone is never part of what the user was told.
        graders.append(
            {
                "type": "required_outputs",
                "match": "substring",
                "include_answer": False,
                "outputs": t.outputs,
            }
        )
    return {
        "id": f"{name}/{split}-{t.index:03d}",
        "cluster": t.user_id,
        "user": {"goal": t.instruction},
        "graders": graders,
        "solution": {
            "actions": [{"tool": a["name"], "args": a["kwargs"]} for a in t.actions],
            "answer": "; ".join(t.outputs) if t.outputs else "Done.",
        },
    }


def _verify_patches(file: Path, entries: list[TaskEntry], patches: list[JSONObject]) -> None:
    """Read the task file back and check each patch (``{}``: none) survived YAML with its
    exact types."""
    reloaded = yaml.safe_load(file.read_text())["tasks"]
    for written, patch, read in zip(entries, patches, reloaded, strict=True):
        a = patch or None
        b = read["graders"][0].get("expected_patch")
        if (a is None) != (b is None) or (a is not None and not strict_same(a, b)):
            raise ConfigError(str(file), written["id"], "a patch value did not survive YAML")


def _write_suites(task_dir: Path, name: str, split: str) -> tuple[Path, Path]:
    common = {
        "seed": 20240624,
        "tasks": ["tasks.yaml"],
        "environments_dir": "../../environments",
        "sandbox": "auto",
        "budgets": {"max_steps": 60, "timeout_s": 900},
    }
    suite = task_dir / "suite.yaml"
    _dump(
        suite,
        {
            "name": name,
            "description": f"tau-bench {name[10:]} ({split}), a tool-calling model as the agent",
            **common,
            "trials": 4,
            "arms": [
                {
                    "name": "llm",
                    "agent": "llm",
                    "model": {
                        "name": "${HARNESS_MODEL:-gpt-4o}",
                        "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}",
                        "api_key_env": "OPENAI_API_KEY",
                        "temperature": 0.0,
                    },
                    "params": {"max_user_turns": 30},
                }
            ],
            "report": {"k": [1, 2, 4]},
        },
        "# HARNESS_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY pick the agent's model;\n"
        "# TAU_USER_MODEL / TAU_USER_BASE_URL the simulated user's (same key).\n",
    )
    check = task_dir / "check-suite.yaml"
    _dump(
        check,
        {
            "name": f"{name}-check",
            "description": "the import checked: the oracle must pass every task, noop the floor",
            **common,
            "trials": 1,
            "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "noop", "agent": "noop"}],
        },
    )
    return suite, check
