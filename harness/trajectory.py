"""Trajectory events: what an agent did, step by step, as graders and viewers read it.

``Event`` is also the declaration of the ``trajectory_events`` table's columns: the table
(``harness.store.tables.TrajectoryEvent``) inherits these fields and adds only its keys.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TypedDict, Unpack

from pydantic import ConfigDict
from sqlalchemy import JSON, Text
from sqlmodel import Field, SQLModel

RESULT_PREVIEW_CHARS = 4000


class Event(SQLModel):
    """One recorded step of a trial.

    kind: ``tool_call`` (the agent called an environment tool), ``message`` (the agent told
    the user something), ``user`` (the simulated user spoke), ``model_call`` (one model API
    request), ``command`` (a raw shell command), ``note`` (harness annotation).

    Every event is what the harness itself saw (a call through the agent's context, a
    sandbox call made through the harness, a model call through the client or the metering
    proxy) unless ``reported``: then an agent program wrote it to ``$HARNESS_TRAJECTORY``
    and nothing vouches for it (trajectory rules skip it unless the task opts in).
    """

    model_config = ConfigDict(extra="forbid")  # type: ignore[assignment]

    step: int
    kind: str
    tool: str | None = None
    args: dict[str, object] | None = Field(default=None, sa_type=JSON)
    content: str | None = Field(default=None, sa_type=Text)
    """Message text, or the tool result truncated to RESULT_PREVIEW_CHARS."""
    ok: bool = True
    blob_ref: str | None = None
    """sha256 of the full result when ``content`` was truncated (kept in the blobs table)."""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    reported: bool = False
    """The agent program said so (a line of ``$HARNESS_TRAJECTORY``); the harness did not
    see it happen."""
    ts: float = Field(default_factory=time.time)
    """Wall-clock time (Unix seconds) the step was recorded."""


class EventFields(TypedDict, total=False):
    """The fields a recorder may give ``Trajectory.record`` (the step is numbered for it)."""

    tool: str | None
    ok: bool
    tokens_in: int
    tokens_out: int
    tokens_cached: int
    cost_usd: float | None
    latency_s: float
    reported: bool


class Trajectory:
    """Append-only recorder handed to agents; events are numbered in order of arrival."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.blobs: dict[str, bytes] = {}

    def record(
        self,
        kind: str,
        content: str | bytes | None = None,
        args: Mapping[str, object] | None = None,
        **fields: Unpack[EventFields],
    ) -> Event:
        """Append one event; a ``content`` longer than RESULT_PREVIEW_CHARS is cut and kept
        whole in ``blobs``. ``args`` is copied into the event as a dict (a TypedDict such as
        ``ModelCallInfo`` is fine)."""
        if isinstance(content, bytes):
            content = content.decode("utf-8", errors="replace")
        blob_ref: str | None = None
        if content is not None and len(content) > RESULT_PREVIEW_CHARS:
            import hashlib

            data = content.encode("utf-8", errors="replace")
            ref = hashlib.sha256(data).hexdigest()
            self.blobs[ref] = data
            blob_ref = ref
            content = (
                content[:RESULT_PREVIEW_CHARS]
                + f"\n…[truncated, {len(data)} bytes in blob {ref[:12]}]"
            )
        event = Event(
            step=len(self.events),
            kind=kind,
            content=content,
            blob_ref=blob_ref,
            args=None if args is None else dict(args),
            **fields,
        )
        self.events.append(event)
        return event

    def tool_calls(self) -> list[Event]:
        return [e for e in self.events if e.kind == "tool_call"]
