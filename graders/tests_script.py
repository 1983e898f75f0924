"""Hidden tests: run a test script after the agent, SWE-bench style, in a fresh grading sandbox.

The trial gives this grader (``runs_code``) a fresh grading sandbox from the task's pinned
image holding the agent's work dir as it left it (``harness.grading``); the script runs there
as the grader, in the workdir, with ``$HIDDEN_DIR`` pointing at the task's hidden files (the
harness's own copy, readable by the grader only). Two lists name the tests that count
(Jimenez et al. 2023):

- ``fail_to_pass``: tests the task's fix must make pass;
- ``pass_to_pass``: tests that passed before and must still pass (a fix that breaks
  something else fails).

Per-test results are read from the script's output, in either format (``format: auto`` tries
both, line by line):

- ``lines``: one line per test, ``PASS name`` / ``FAIL name`` / ``ERROR name`` / ``SKIP name``
  (a colon after the status is allowed: ``PASS: name``);
- ``pytest``: the short summary of ``pytest -rA`` (``PASSED tests/test_x.py::test_a``,
  ``FAILED ... - message``) or verbose lines (``tests/test_x.py::test_a PASSED [ 50%]``).

**Result channel.** Each grading draws a fresh nonce and puts it in the grader's
environment only, as ``$HARNESS_RESULT_NONCE``; only result lines that start with it count
(``<nonce> PASS name``; the nonce is stripped before parsing), and the test process must end
by itself (not killed, not timed out: exit status below 128). The code under test must run
through ``$HARNESS_AS_AGENT CMD ...`` (as the unprivileged user, with a clean environment:
it cannot read the grader's environment, memory or hidden files, nor rewrite them); the
shipped tests call it in child processes and compare what it prints as data. Residual risk:
code under test the script imports or runs directly runs as the grader and can forge
anything (docs/integrity.md). ``nonce: false`` restores plain lines (for scripts you cannot
change; forgeable by the code under test). A ``reward_file`` is written by the test process:
in a directory of the grader's own (Harbor's ``/logs/verifier``, made afresh with mode 700
by the import's command), a link or an unreadable file there fails the trial.

A test named in a list but absent from the output counts as failed ("not run"). When both
lists are empty the verdict is the script's exit code, or, with ``reward_file`` (Harbor and
Terminal-Bench tests), the reward the script wrote there: a number, or JSON with a
``reward`` key; it passes at ``reward_threshold`` or above, and a missing or unreadable file
fails. ``score`` is the fraction of listed tests
that passed. The output is kept as evidence, head and tail, truncated to ``max_output_chars``.
"""

from __future__ import annotations

import re
import secrets
import shlex
from typing import Any, ClassVar, Literal

from pydantic import Field

from graders.base import Evidence, GraderParams, Verdict
from harness.errors import GraderError

_STATUS = {
    "PASS": "PASS",
    "PASSED": "PASS",
    "XFAIL": "PASS",
    "FAIL": "FAIL",
    "FAILED": "FAIL",
    "XPASS": "FAIL",
    "ERROR": "ERROR",
    "SKIP": "SKIP",
    "SKIPPED": "SKIP",
}
_LINE = re.compile(r"^\s*(PASS|FAIL|ERROR|SKIP)\b:?\s+(\S.*?)\s*$")
_PYTEST_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+)(?:\s+-\s.*)?$")
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_HIDDEN_REF = re.compile(r"\$(?:\{HIDDEN_DIR\}|HIDDEN_DIR\b)(/[^\s\"'`;|&()<>$]*)?")
"""``$HIDDEN_DIR`` or ``${HIDDEN_DIR}`` in a command, with the path after it, if any."""


def parse_results(output: str, fmt: str = "auto") -> dict[str, str]:
    """test name -> PASS / FAIL / ERROR / SKIP. A later line for the same test wins, except
    that a failure is never overwritten by a pass (pytest prints a setup error and a pass)."""
    results: dict[str, str] = {}

    def put(name: str, status: str) -> None:
        if results.get(name) in ("FAIL", "ERROR") and status == "PASS":
            return
        results[name] = status

    for raw in output.splitlines():
        line = raw.rstrip()
        if fmt in ("auto", "pytest"):
            m = _PYTEST_SUMMARY.match(line)
            if m:
                put(m.group(2), _STATUS[m.group(1)])
                continue
            m = _PYTEST_VERBOSE.match(line)
            if m:
                put(m.group(1), _STATUS[m.group(2)])
                continue
        if fmt in ("auto", "lines"):
            m = _LINE.match(line)
            if m:
                put(m.group(2), _STATUS[m.group(1)])
    return results


def tagged_lines(output: str, nonce: str) -> str:
    """The lines of ``output`` that start with ``nonce`` (and a space), without it."""
    prefix = nonce + " "
    return "\n".join(line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix))


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail (where test summaries are) of a long output."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n…[{cut} characters cut]…\n{text[-tail:]}"


async def _read_reward(sandbox: Any, path: str) -> tuple[float | None, str | None]:
    """(reward, problem): the number in ``path``, or JSON ``{"reward": x}``."""
    import json

    try:
        text = (await sandbox.read_file(path)).decode(errors="replace").strip()
    except (OSError, PermissionError) as exc:
        return None, f"the tests wrote no reward to {path} ({type(exc).__name__})"
    try:
        value = json.loads(text)
    except ValueError:
        return None, f"reward file {path} holds {text[:60]!r}, not a number"
    if isinstance(value, dict):
        value = value.get("reward")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"reward file {path} holds {text[:60]!r}, not a number"
    return float(value), None


async def _check_material(sandbox: Any, env: dict[str, str], files: list[str]) -> None:
    """``GraderError`` (the trial is unresolved, not failed) when a file the command names
    under $HIDDEN_DIR is not in the hidden directory copied in for grading."""
    if not files or "HIDDEN_DIR" not in env:
        return
    tests = " ".join(
        f'[ -{"d" if f.endswith("/") else "f"} "$HIDDEN_DIR"/{shlex.quote(f)} ] || '
        f"printf '%s\\n' {shlex.quote(f)};"
        for f in files
    )
    found = await sandbox.exec(tests, timeout=60, env=env)
    missing = found.stdout.splitlines()
    if missing or not found.ok:
        raise GraderError(
            "grading material missing: the hidden directory copied in for grading has no "
            + ", ".join(missing or files)
            + " (the command runs it); the trial has no verdict"
        )


class TestsScriptParams(GraderParams):
    type: Literal["tests_script"] = "tests_script"
    command: str = Field(
        'bash "$HIDDEN_DIR/test.sh"',
        description="run in the sandbox's workdir after the agent, with $HIDDEN_DIR set",
    )
    fail_to_pass: list[str] = Field(default_factory=list)
    """tests the fix must make pass (names as the script prints them)"""
    pass_to_pass: list[str] = Field(default_factory=list)
    """tests that passed before and must still pass"""
    format: Literal["auto", "lines", "pytest"] = "auto"
    """how result lines are read: lines (PASS name), pytest (-rA summary or verbose), auto
    (both)"""
    timeout_s: float = Field(300.0, gt=0, description="seconds")
    max_output_chars: int = Field(8000, ge=200)
    """characters of the script's output kept as evidence (head and tail)"""
    reward_file: str | None = Field(
        None, description="file the script writes its reward to (Harbor: /logs/verifier/...)"
    )
    reward_threshold: float = Field(1.0, description="the least reward that passes")
    nonce: bool = Field(
        True,
        description="count only result lines prefixed with $HARNESS_RESULT_NONCE (false: "
        "plain lines, forgeable by the code under test)",
    )

    def needs_hidden_dir(self) -> bool:
        return _HIDDEN_REF.search(self.command) is not None

    def hidden_files(self) -> list[str]:
        """The paths the command names under ``$HIDDEN_DIR`` (``bash "$HIDDEN_DIR/test.sh"``:
        ``test.sh``); paths with shell patterns in them are not checked."""
        found = [m.group(1).lstrip("/") for m in _HIDDEN_REF.finditer(self.command) if m.group(1)]
        return [p for p in dict.fromkeys(found) if p and not re.search(r"[*?\[]", p)]


class TestsScript:
    """Outcome grader: hidden tests, FAIL_TO_PASS and PASS_TO_PASS."""

    __test__ = False  # not a pytest class, despite its name

    type_name: ClassVar[str] = "tests_script"
    version: ClassVar[str] = "2"
    runs_code: ClassVar[bool] = True
    """It executes the hidden tests: the trial gives it a fresh grading sandbox."""
    Params: ClassVar[type[TestsScriptParams]] = TestsScriptParams

    def __init__(self, params: TestsScriptParams):
        self.params = params

    @property
    def label(self) -> str:
        return self.params.name or self.type_name

    async def grade(self, evidence: Evidence) -> Verdict:
        p = self.params
        if evidence.sandbox is None:
            raise GraderError("tests_script needs the sandbox, which was not provided")
        if evidence.hidden_dir is None and "HIDDEN_DIR" in p.command:
            raise GraderError(
                "tests_script's command uses $HIDDEN_DIR but no hidden dir was copied in "
                "(does the task declare 'hidden'?)"
            )
        nonce = secrets.token_hex(16)
        env = {"HIDDEN_DIR": evidence.hidden_dir} if evidence.hidden_dir else {}
        await _check_material(evidence.sandbox, env, p.hidden_files())
        env["HARNESS_RESULT_NONCE"] = nonce
        result = await evidence.sandbox.exec(p.command, timeout=p.timeout_s, env=env)
        output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        text = result.stdout + "\n" + result.stderr
        if p.nonce:
            text = tagged_lines(text, nonce)
        results = parse_results(text, p.format)

        reasons: list[str] = []
        if result.timed_out:
            reasons.append(f"test script timed out after {p.timeout_s}s")
        elif result.exit_code >= 128:
            reasons.append(f"test process was killed (exit {result.exit_code})")
        tests: list[dict[str, Any]] = []
        for group, names in (("fail_to_pass", p.fail_to_pass), ("pass_to_pass", p.pass_to_pass)):
            for name in names:
                status = results.get(name, "NOT_RUN")
                tests.append({"name": name, "group": group, "status": status})
                if status != "PASS":
                    what = "did not run" if status == "NOT_RUN" else status
                    reasons.append(f"{group} test '{name}' {what}")
        if tests:
            passed_n = sum(1 for t in tests if t["status"] == "PASS")
            score = passed_n / len(tests)
            passed = not reasons
            if not passed and result.exit_code >= 128:
                score = 0.0
        elif p.reward_file:
            reward, problem = await _read_reward(evidence.sandbox, p.reward_file)
            ended = result.exit_code < 128 and not result.timed_out
            passed = ended and reward is not None and reward >= p.reward_threshold
            score = max(0.0, min(1.0, reward)) if reward is not None and ended else 0.0
            if problem:
                reasons.append(problem)
            elif not passed and ended:
                reasons.append(f"reward {reward:g} < {p.reward_threshold:g}")
        else:
            passed = result.ok
            score = float(passed)
            if not passed and not result.timed_out:
                reasons.append(f"test script exited with code {result.exit_code}")
        return Verdict(
            grader=self.label,
            passed=passed,
            score=score,
            reasons=reasons,
            details={
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "tests": tests,
                "parsed": len(results),
                "output": truncate(output, p.max_output_chars),
            },
            role="outcome",
            version=self.version,
        )
