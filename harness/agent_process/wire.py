"""The protocol between the harness and a ``module:Class`` agent's child process.

JSON lines over the child's stdin (harness → child) and stdout (child → harness); the
agent's own prints go to its stderr. The harness first sends ``{"op": "start", ...}``
(what the agent's context holds); the child then sends requests ``{"id": N, "op": OP,
"args": {...}}`` and the harness answers each with ``{"id": N, "ok": true, "value": ...}``
or ``{"id": N, "ok": false, "error": {...}}``, both carrying the trial's ``usage`` and the
trajectory ``events`` the request recorded. Notifications (``charge``, ``say``) have no
id and get no answer. The child ends with ``{"op": "result", ...}``.

Nothing the child sends is trusted: every request is checked by the harness, which holds
the trajectory, the budgets and the usage; the child holds copies.
"""

from __future__ import annotations

import base64
import builtins
import json
from typing import Any, TypedDict

from harness import errors
from harness.agents.base import Usage
from harness.sandbox.base import ExecResult

MAX_LINE = 256 * 1024 * 1024
"""Longest message either side accepts (a file the agent writes or reads, base64)."""

PROXY_ORIGIN = "{harness-proxy}"
"""Stands for the metering proxy's origin in a jailed child's environment and model
settings: the child replaces it with its loopback relay to the proxy's socket."""

OPS = (
    "call_tool",
    "run_command",
    "exec",
    "read_file",
    "write_file",
    "copy_in",
    "user_opening",
    "user_reply",
)
"""Requests the harness answers."""
NOTICES = ("charge", "say")
"""Notifications the harness applies in order, without an answer."""


class WireError(TypedDict):
    """An exception carried across the pipe as data."""

    type: str
    message: str
    reason: str
    detail: str


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()


def json_loads(line: bytes) -> dict[str, Any]:
    """One message; ``ValueError`` when the line is not a JSON object."""
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("a message is a JSON object")
    return value


def to_b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_b64(text: object) -> bytes:
    if not isinstance(text, str):
        raise TypeError("expected base64 text")
    return base64.b64decode(text, validate=True)


def error_to_wire(exc: BaseException) -> WireError:
    """``exc`` as data: its class name, message, and an ``AgentFailure``'s reason."""
    kind = type(exc).__name__
    if isinstance(exc, errors.EpisodeEnded):
        return {"type": "EpisodeEnded", "message": str(exc), "reason": exc.tool, "detail": ""}
    if isinstance(exc, errors.BudgetExceeded):
        kind = "BudgetExceeded"
    elif isinstance(exc, errors.AgentFailure):
        kind = "AgentFailure"
    elif isinstance(exc, errors.InfraError):
        kind = "InfraError"
    reason = exc.reason if isinstance(exc, errors.AgentFailure) else ""
    detail = exc.detail if isinstance(exc, errors.AgentFailure) else ""
    return {"type": kind, "message": str(exc)[:2000], "reason": reason, "detail": detail[:2000]}


def error_from_wire(wire: WireError) -> BaseException:
    """The exception a request's error stands for, as the agent's code sees it: the
    harness's own kinds (budgets, the episode's end, agent failures, infrastructure) and
    built-in exceptions by name; anything else as ``RuntimeError``."""
    kind, message = wire.get("type", ""), wire.get("message", "")
    if kind == "EpisodeEnded":
        return errors.EpisodeEnded(wire.get("reason", ""))
    if kind in ("BudgetExceeded", "AgentFailure"):
        cls = errors.BudgetExceeded if kind == "BudgetExceeded" else errors.AgentFailure
        return cls(wire.get("reason", "agent_error"), wire.get("detail", ""))
    if kind == "InfraError":
        return errors.InfraError(message)
    builtin = getattr(builtins, kind, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        return builtin(message)
    return RuntimeError(f"{kind}: {message}")


def exec_to_wire(result: ExecResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_s": result.duration_s,
        "timed_out": result.timed_out,
        "dropped": result.dropped,
    }


def exec_from_wire(value: dict[str, Any]) -> ExecResult:
    return ExecResult(
        int(value["exit_code"]),
        str(value["stdout"]),
        str(value["stderr"]),
        float(value.get("duration_s", 0.0)),
        bool(value.get("timed_out", False)),
        int(value.get("dropped", 0)),
    )


def usage_to_wire(usage: Usage) -> dict[str, Any]:
    return dict(vars(usage))


def usage_into(usage: Usage, value: dict[str, Any]) -> None:
    """Overwrite the child's copy of the usage with the harness's figures."""
    for name in vars(usage):
        if name in value:
            setattr(usage, name, value[name])


__all__ = [
    "MAX_LINE",
    "NOTICES",
    "OPS",
    "PROXY_ORIGIN",
    "WireError",
    "encode",
    "error_from_wire",
    "error_to_wire",
    "json_loads",
    "exec_from_wire",
    "exec_to_wire",
    "from_b64",
    "to_b64",
    "usage_into",
    "usage_to_wire",
]
