"""A corpus of malformed suite, task and environment files, generated from one valid suite.

Each case changes one thing (a hostile YAML construct, a number out of range, a path leaving
its tree, a misspelt key) and names the field its one-line error must mention. The test loads
every case in-process; ``benchmarks/config_corpus.py`` runs them through the CLI and times them.

    python -m tests.cli.config_corpus DEST     # writes DEST/<case>/ for inspection
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SUITE: dict[str, Any] = {
    "name": "corpus",
    "seed": 7,
    "trials": 2,
    "tasks": ["tasks.yaml"],
    "arms": [
        {"name": "base", "agent": "simulated", "params": {"p": 0.5}},
        {"name": "cand", "agent": "oracle"},
    ],
    "sandbox": "local",
    "budgets": {"max_steps": 10, "timeout_s": 30},
    "retries": {"max_attempts": 2, "backoff_s": 0},
    "limits": {"memory": "512m", "pids": 64, "cpus": 1},
    "report": {"k": [1, 2], "confidence": 0.95},
}
TASKS: dict[str, Any] = {
    "tasks": [
        {
            "id": "t1",
            "instruction": "What is 1 + 1?",
            "environment": "env1",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 2}],
            "solution": {"answer": "2"},
            "hidden": "hidden/t1",
        },
        {
            "id": "t2",
            "instruction": "What is 2 + 2?",
            "graders": [{"type": "answer_match", "mode": "numeric", "expected": 4}],
            "solution": {"answer": "4"},
        },
    ]
}
ENV: dict[str, Any] = {"name": "env1", "files": "files", "image": {"ref": "harness-base:latest"}}

SUITE_FILE = "suite.yaml"
TASK_FILE = "tasks.yaml"
ENV_FILE = "environments/env1/environment.yaml"


@dataclass
class Case:
    """One malformed config: the files that differ from the valid base, and what the error
    must name (``expect``: a field path or phrase; ``file``: which file it blames)."""

    name: str
    expect: str
    file: str = SUITE_FILE
    files: dict[str, str | bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)  # path -> symlink target
    has_line: bool = True


def base_files() -> dict[str, str | bytes]:
    return {
        SUITE_FILE: yaml.safe_dump(SUITE, sort_keys=False),
        TASK_FILE: yaml.safe_dump(TASKS, sort_keys=False),
        ENV_FILE: yaml.safe_dump(ENV, sort_keys=False),
        "hidden/t1/test.sh": "exit 0\n",
        "environments/env1/files/README": "hello\n",
    }


def write_case(case: Case, dest: Path) -> Path:
    """Write the base suite with ``case`` applied under ``dest``; returns the suite file."""
    for rel, text in {**base_files(), **case.files}.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
    for rel, target in case.links.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)
    return dest / SUITE_FILE


# ------------------------------------------------------------------------------ builders
def _set(doc: dict, path: str, value: Any) -> dict:
    """A deep copy of ``doc`` with ``path`` (dotted, ints index lists) set or deleted."""
    out = copy.deepcopy(doc)
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = out
    for p in parts[:-1]:
        if isinstance(node, dict) and p not in node:
            node[p] = {}
        node = node[p]
    if value is _DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return out


_DELETE = object()


def suite(name: str, path: str, value: Any, expect: str | None = None) -> Case:
    text = yaml.safe_dump(_set(SUITE, path, value), sort_keys=False)
    return Case(name, expect or path, SUITE_FILE, {SUITE_FILE: text})


def suite_raw(name: str, path: str, raw: str, expect: str | None = None) -> Case:
    """Set a suite field to raw YAML text (e.g. ``.inf``, ``1e11``, ``yes``)."""
    marker = "__RAW__"
    text = yaml.safe_dump(_set(SUITE, path, marker), sort_keys=False)
    return Case(name, expect or path, SUITE_FILE, {SUITE_FILE: text.replace(marker, raw)})


def task(name: str, path: str, value: Any, expect: str | None = None) -> Case:
    text = yaml.safe_dump(_set(TASKS, path, value), sort_keys=False)
    return Case(name, expect or path, TASK_FILE, {TASK_FILE: text})


def task_raw(name: str, path: str, raw: str, expect: str | None = None) -> Case:
    marker = "__RAW__"
    text = yaml.safe_dump(_set(TASKS, path, marker), sort_keys=False)
    return Case(name, expect or path, TASK_FILE, {TASK_FILE: text.replace(marker, raw)})


def env(name: str, path: str, value: Any, expect: str | None = None) -> Case:
    text = yaml.safe_dump(_set(ENV, path, value), sort_keys=False)
    return Case(name, expect or path, ENV_FILE, {ENV_FILE: text})


def laughs(levels: int, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _suite_text() -> str:
    return yaml.safe_dump(SUITE, sort_keys=False)


def _task_text() -> str:
    return yaml.safe_dump(TASKS, sort_keys=False)


# ------------------------------------------------------------------------------ the corpus
def yaml_cases() -> list[Case]:
    """Hostile or broken YAML, in the suite and in a task file."""
    out: list[Case] = []
    for where, text_of in ((SUITE_FILE, _suite_text), (TASK_FILE, _task_text)):
        tag = "suite" if where == SUITE_FILE else "task"
        out += [
            Case(f"{tag}-billion-laughs", "aliases expand", where, {where: laughs(9)}),
            Case(
                f"{tag}-laughs-in-field",
                "aliases expand",
                where,
                {where: laughs(7, 10) + text_of()},
            ),
            Case(f"{tag}-recursive-anchor", "alias to itself", where, {where: "a: &a [*a]\n"}),
            Case(
                f"{tag}-recursive-mapping",
                "alias to itself",
                where,
                {where: "a: &a\n  b: *a\n" + text_of()},
            ),
            Case(
                f"{tag}-duplicate-top-key",
                "duplicate key",
                where,
                {where: text_of() + ("name: again\n" if tag == "suite" else "tasks: []\n")},
            ),
            Case(f"{tag}-unclosed-bracket", "invalid YAML", where, {where: "a: [1, 2\n"}),
            Case(f"{tag}-tab-indent", "invalid YAML", where, {where: "a:\n\t- 1\n"}),
            Case(
                f"{tag}-bad-utf8",
                "cannot read",
                where,
                {where: b"name: \xff\xfe\n"},
                has_line=False,
            ),
            Case(f"{tag}-empty", "expected a mapping", where, {where: ""}, has_line=False),
            Case(f"{tag}-top-level-list", "expected a mapping", where, {where: "- 1\n- 2\n"}),
            Case(f"{tag}-top-level-scalar", "expected a mapping", where, {where: "hello\n"}),
            Case(f"{tag}-deep-nesting", "nested", where, {where: "a: " + "[" * 300 + "]" * 300}),
            Case(
                f"{tag}-unknown-tag",
                "invalid YAML",
                where,
                {where: "a: !!python/object:os.system x\n"},
            ),
            Case(f"{tag}-two-documents", "invalid YAML", where, {where: "a: 1\n---\nb: 2\n"}),
            Case(
                f"{tag}-huge-file",
                "bytes",
                where,
                {where: "# " + "x" * (5 * 1024 * 1024) + "\n"},
                has_line=False,
            ),
        ]
    dup_arm = _suite_text().replace("- name: base\n", "- name: base\n  name: other\n", 1)
    out.append(
        Case("suite-duplicate-nested-key", "duplicate key", SUITE_FILE, {SUITE_FILE: dup_arm})
    )
    dup_task = _task_text().replace("- id: t1\n", "- id: t1\n  id: t1b\n", 1)
    out.append(Case("task-duplicate-nested-key", "duplicate key", TASK_FILE, {TASK_FILE: dup_task}))
    return out


def number_cases() -> list[Case]:
    """Numbers out of range, of the wrong kind, or not finite."""
    big = 2**63
    return [
        suite_raw("trials-1e11-text", "trials", "1e11"),
        suite("trials-1e11", "trials", 10**11),
        suite("trials-true", "trials", True),
        suite("trials-zero", "trials", 0),
        suite("trials-negative", "trials", -3),
        suite("trials-float", "trials", 2.5),
        suite("trials-string", "trials", "3"),
        suite("trials-list", "trials", [1]),
        suite("seed-2-63", "seed", big),
        suite("seed-huge", "seed", 10**30),
        suite("seed-negative", "seed", -1),
        suite("seed-true", "seed", True),
        suite("seed-float", "seed", 1.5),
        suite_raw("seed-inf", "seed", ".inf"),
        suite("concurrency-zero", "concurrency", 0),
        suite("concurrency-huge", "concurrency", 10**6),
        suite("concurrency-true", "concurrency", True),
        suite("max-k-1e9", "repeats.max_k", 10**9, "repeats.max_k"),
        suite("max-k-true", "repeats.max_k", True, "repeats.max_k"),
        suite("max-k-one", "repeats.max_k", 1, "repeats.max_k"),
        suite("budget-trials-negative", "repeats.budget_trials", -1),
        suite("repeats-mode-typo", "repeats.mode", "adaptve"),
        suite_raw("timeout-inf", "budgets.timeout_s", ".inf"),
        suite_raw("timeout-nan", "budgets.timeout_s", ".nan"),
        suite("timeout-negative", "budgets.timeout_s", -5),
        suite("timeout-zero", "budgets.timeout_s", 0),
        suite("timeout-1e12", "budgets.timeout_s", 1e12),
        suite("timeout-string", "budgets.timeout_s", "soon"),
        suite("max-steps-zero", "budgets.max_steps", 0),
        suite("max-steps-true", "budgets.max_steps", True),
        suite("max-steps-huge", "budgets.max_steps", 10**12),
        suite("max-tokens-negative", "budgets.max_tokens", -10),
        suite_raw("max-cost-inf", "budgets.max_cost_usd", ".inf"),
        suite("max-cost-negative", "budgets.max_cost_usd", -1.0),
        suite("max-attempts-zero", "retries.max_attempts", 0),
        suite("max-attempts-huge", "retries.max_attempts", 10**6),
        suite_raw("backoff-inf", "retries.backoff_s", ".inf"),
        suite("backoff-negative", "retries.backoff_s", -1),
        suite("memory-lots", "limits.memory", "lots"),
        suite("memory-negative", "limits.memory", "-1g"),
        suite("memory-list", "limits.memory", ["1g"]),
        suite("disk-zero", "limits.disk", "0"),  # a tmpfs of size 0 has no limit at all
        suite("disk-tiny", "limits.disk", "512k"),
        suite("disk-lots", "limits.disk", "lots"),
        Case(  # the environment's files would fill every trial's quota before the agent starts
            "disk-below-files",
            "limits.disk",
            SUITE_FILE,
            {
                SUITE_FILE: yaml.safe_dump(_set(SUITE, "limits.disk", "1m"), sort_keys=False),
                "environments/env1/files/big.bin": b"\0" * (2 << 20),
            },
        ),
        suite("pids-tiny", "limits.pids", 1),
        suite("pids-true", "limits.pids", True),
        suite_raw("cpus-inf", "limits.cpus", ".inf"),
        suite("cpus-zero", "limits.cpus", 0),
        suite("report-k-zero", "report.k", [0], "report.k"),
        suite("report-k-bool", "report.k", [True], "report.k"),
        suite("report-k-huge", "report.k", [10**9], "report.k"),
        suite("report-confidence-high", "report.confidence", 1.5),
        suite_raw("report-confidence-nan", "report.confidence", ".nan"),
        suite("report-cluster-key", "report.cluster_key", "repo"),
        suite("gate-rule-typo", "gate", {"rule": "maybe"}, "gate.rule"),
        suite("gate-margin-big", "gate", {"rule": "non-inferiority", "margin": 2}, "gate.margin"),
        suite("gate-no-margin", "gate", {"rule": "non-inferiority"}, "gate"),
        suite(
            "gate-resamples-huge",
            "gate",
            {"rule": "improvement", "n_resamples": 10**12},
            "gate.n_resamples",
        ),
        suite("gate-max-unresolved", "gate", {"rule": "improvement", "max_unresolved": 2}),
        suite(
            "model-timeout-negative",
            "arms.0.model",
            {"name": "m", "timeout_s": -1},
            "arms[0].model.timeout_s",
        ),
        suite(
            "model-price-negative",
            "arms.0.model",
            {"name": "m", "price": {"input": -1, "output": 1}},
            "arms[0].model.price.input",
        ),
        suite(
            "model-retries-true",
            "arms.0.model",
            {"name": "m", "max_retries": True},
            "arms[0].model.max_retries",
        ),
        task_raw("weight-inf", "tasks.0.weight", ".inf", "tasks[0].weight"),
        task_raw("weight-nan", "tasks.0.weight", ".nan", "tasks[0].weight"),
        task("weight-zero", "tasks.0.weight", 0, "tasks[0].weight"),
        task("weight-negative", "tasks.0.weight", -2, "tasks[0].weight"),
        task("weight-huge", "tasks.0.weight", 1e300, "tasks[0].weight"),
        task("task-timeout-zero", "tasks.0.budgets", {"timeout_s": 0}, "tasks[0].budgets"),
        task("task-steps-true", "tasks.0.budgets", {"max_steps": True}, "tasks[0].budgets"),
    ]


def structure_cases() -> list[Case]:
    """Missing, misspelt or mistyped fields of suites and tasks."""
    return [
        suite("suite-unknown-key", "trails", 3),
        suite("suite-unknown-nested", "budgets.max_step", 3, "budgets.max_step"),
        suite("suite-no-name", "name", _DELETE, "name"),
        suite("suite-name-list", "name", ["a"]),
        suite("suite-no-arms", "arms", _DELETE, "arms"),
        suite("suite-arms-empty", "arms", []),
        suite("suite-arms-mapping", "arms", {"a": 1}),
        suite("arm-bad-name", "arms.0.name", "has space", "arms[0].name"),
        suite("arm-no-agent", "arms.0.agent", _DELETE, "arms[0].agent"),
        suite("arm-unknown-agent", "arms.0.agent", "nope", "arms[0].agent"),
        suite("arm-params-list", "arms.0.params", [1], "arms[0].params"),
        suite("arm-duplicate-names", "arms.1.name", "base", "duplicate arm"),
        suite("primary-unknown", "report.primary", {"baseline": "base", "candidate": "x"}),
        suite("aa-unknown-baseline", "report.primary", {"baseline": "zzz", "candidate": "cand"}),
        suite("adaptive-max-k-le-trials", "repeats", {"mode": "adaptive", "max_k": 2}),
        suite("suite-tasks-empty", "tasks", []),
        suite("suite-tasks-missing-file", "tasks", ["nope.yaml"], "tasks[0]"),
        suite("suite-tasks-glob-none", "tasks", ["*.nothing"], "tasks[0]"),
        task("hidden-dotdot-sibling", "tasks.0.hidden", "../elsewhere", "leaves"),
        suite("suite-tasks-string", "tasks", "tasks.yaml"),
        suite("sandbox-unknown", "sandbox", "nope"),
        suite("executor-unknown", "executor", "cloud"),
        suite("executor-options-local", "executor_options", {"x": 1}),
        suite("denominator-typo", "denominator", "ignore"),
        suite("store-int", "store", 5),
        suite("variants-string", "variants", "often"),
        suite("environments-dir-missing", "environments_dir", "nowhere"),
        task("task-no-id", "tasks.0.id", _DELETE, "tasks[0].id"),
        task("task-id-spaces", "tasks.0.id", "a b", "tasks[0].id"),
        task("task-instruction-list", "tasks.0.instruction", [1], "tasks[0].instruction"),
        task("task-graders-empty", "tasks.0.graders", [], "tasks[0].graders"),
        task("task-grader-unknown", "tasks.0.graders.0.type", "magic", "tasks[0].graders[0]"),
        task(
            "task-grader-param-typo",
            "tasks.0.graders.0.expectd",
            2,
            "tasks[0].graders[0]",
        ),
        task("task-unknown-key", "tasks.0.nonsense", 1, "tasks[0].nonsense"),
        task("task-class-list", "tasks.0.class", [1], "tasks[0].class"),
        task("task-environment-unknown", "tasks.0.environment", "nope", "environment"),
        task("task-duplicate-id", "tasks.1.id", "t1", "duplicate task id"),
        task("task-list-empty", "tasks", [], "tasks"),
        task("task-defaults-list", "defaults", [1], "defaults"),
        task("task-must-never-text", "tasks.0.must_never", "maybe", "tasks[0].must_never"),
        task("task-variant-no-id", "tasks.0.variants", [{"instruction": "x"}], "tasks[0].variants"),
        task("task-solution-typo", "tasks.0.solution.answr", "2", "tasks[0].solution"),
        task("task-user-turns-text", "tasks.0.user", {"turns": "hi"}, "tasks[0].user.turns"),
        task("task-simulated-list", "tasks.0.simulated", [1], "tasks[0].simulated"),
        task("task-setup-text", "tasks.0.setup", {"a": 1}, "tasks[0].setup"),
        task("task-network-mapping", "tasks.0.network", {"a": 1}, "tasks[0].network"),
    ]


def path_cases() -> list[Case]:
    """Paths and symlinks that leave the suite's (or the environment's) tree."""
    return [
        task("hidden-absolute", "tasks.0.hidden", "/etc/ssl", "tasks[0].hidden"),
        task("hidden-dotdot", "tasks.0.hidden", "../../..", "tasks[0].hidden"),
        task("hidden-missing", "tasks.0.hidden", "hidden/none", "tasks[0].hidden"),
        Case(
            "hidden-symlink-dir-out",
            "tasks[0].hidden",
            TASK_FILE,
            {TASK_FILE: _task_text().replace("hidden/t1", "hidden/link")},
            links={"hidden/link": "/etc"},
        ),
        Case(
            "hidden-symlink-file-out",
            "symlink",
            TASK_FILE,
            links={"hidden/t1/shadow": "/etc/shadow"},
        ),
        Case(
            "hidden-symlink-nested-out",
            "symlink",
            TASK_FILE,
            links={"hidden/t1/sub/ssl": "/etc/ssl"},
        ),
        env("env-files-absolute", "files", "/etc", "files"),
        env("env-files-dotdot", "files", "../../..", "files"),
        Case(
            "env-files-symlink-out",
            "symlink",
            ENV_FILE,
            links={"environments/env1/files/passwd": "/etc/passwd"},
        ),
        env("env-policy-outside", "policy", "/etc/shadow", "policy"),
        env("env-dockerfile-outside", "image", {"dockerfile": "../../Dockerfile"}, "dockerfile"),
        env("env-name-mismatch", "name", "other", "name"),
        env("env-image-both", "image", {"ref": "a", "dockerfile": "Dockerfile"}, "image"),
        env(
            "env-tool-bad-name",
            "tools",
            [{"name": "a b", "description": "d", "command": "c"}],
            "tools[0].name",
        ),
        env(
            "env-tool-timeout-inf",
            "tools",
            [{"name": "t", "description": "d", "command": "c", "timeout_s": float("inf")}],
            "tools[0].timeout_s",
        ),
        env("env-state-command-missing", "state", {"kind": "command"}, "state"),
        env("env-unknown-key", "imagee", {}, "imagee"),
        Case(
            "env-duplicate-key",
            "duplicate key",
            ENV_FILE,
            {ENV_FILE: yaml.safe_dump(ENV, sort_keys=False) + "name: env1\n"},
        ),
    ]


def all_cases() -> list[Case]:
    cases = yaml_cases() + number_cases() + structure_cases() + path_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


CASES: Callable[[], list[Case]] = all_cases


def main(argv: list[str]) -> int:
    dest = Path(argv[1] if len(argv) > 1 else "config-corpus")
    for case in all_cases():
        write_case(case, dest / case.name)
    print(f"wrote {len(all_cases())} cases under {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
