"""Command-line mistakes exit 2 with the CLI library's one-line message, never a traceback.

Runs under every supported typer (CI runs this file again with the lowest pinned typer,
which uses the external click; newer typer bundles its own copy).
"""

from __future__ import annotations

import contextlib
import io
import sys

import pytest
import typer

from harness import __version__
from harness.cli import app, main
from tests.conftest import run_cli, write_suite


def _commands() -> list[str]:
    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _main(*argv: str) -> tuple[int, str, str]:
    """Run ``harness ARGV`` in this process (fast); returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["harness", *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    else:  # pragma: no cover - main always exits
        code = 0
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


def _assert_usage_error(code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "Error:" in err and "--help" in err or "-h' for help" in err, err


def test_every_command_is_listed():
    assert {"run", "report", "runs", "validate", "compare", "gate", "history"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_bad_option_exits_2(command):
    code, _, err = _main(command, "--no-such-option")
    _assert_usage_error(code, err)
    assert "--no-such-option" in err


@pytest.mark.parametrize("command", _commands())
def test_short_help_works(command):
    code, out, err = _main(command, "-h")
    assert code == 0, err
    assert "Usage" in out
    assert "long because" not in out.lower(), out  # reasons for code length are not user help


@pytest.mark.parametrize(
    "argv",
    [
        ["--bogus"],
        ["no-such-command"],
        ["run", "--trials", "abc", "suite.yaml"],
        ["run", "--concurrency", "1.5", "suite.yaml"],
        ["gate"],  # missing argument
        ["history"],
        ["compare", "A", "B", "C"],  # one argument too many
    ],
    ids=lambda a: " ".join(a),
)
def test_usage_mistakes_exit_2(argv):
    code, _, err = _main(*argv)
    _assert_usage_error(code, err)


def test_version_and_top_level_help():
    code, out, _ = _main("--version")
    assert code == 0 and out.strip() == f"harness {__version__}"
    code, out, _ = _main("-h")
    assert code == 0 and "run" in out and "--version" in out
    assert "long because" not in out.lower(), out


def test_compare_with_one_run(tmp_path):
    """docs/release.md's `harness compare RUN`: one run's baseline against its candidate."""
    store = f"sqlite:///{tmp_path}/s.db"
    suite = write_suite(tmp_path / "s", n_tasks=3)
    code, _, err = _main("run", str(suite), "--store", store, "-q")
    assert code in (0, 3), err
    code, out, err = _main("compare", "latest", "--store", store, "--json")
    assert code == 0, err
    assert '"baseline_side"' in out and "base" in out and "cand" in out


@pytest.mark.parametrize(
    "argv", [["--bogus"], ["run", "--trials", "abc", "x.yaml"], ["compare"]], ids=str
)
def test_usage_error_through_the_real_entry_point(argv):
    """The same through a subprocess, as a user's shell runs it."""
    proc = run_cli(*argv, timeout=60)
    _assert_usage_error(proc.returncode, proc.stderr)
    assert proc.stdout == ""
