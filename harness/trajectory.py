"""Trajectory events: what an agent did, step by step, as graders and viewers read it.

``Event`` is also the declaration of the ``trajectory_events`` table's columns: the table
(``harness.store.tables.TrajectoryEvent``) inherits these fields and adds only its keys.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TypedDict, Unpack

from pydantic import ConfigDict
from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from harness import text
from harness.text_columns import StoredString, StoredText

RESULT_PREVIEW_CHARS = 4000
TRIAL_OUTPUT_LIMIT = 32 << 20
"""Bytes of event content (previews and full results) one trial keeps at most."""


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
    kind: str = Field(sa_type=StoredString)
    tool: str | None = Field(default=None, sa_type=StoredString)
    args: dict[str, object] | None = Field(default=None, sa_type=JSON)
    content: str | None = Field(default=None, sa_type=StoredText)
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
    """Append-only recorder handed to agents; events are numbered in order of arrival.

    Output kept per trial is capped: the content of events (previews and the full results
    in ``blobs``) holds at most ``TRIAL_OUTPUT_LIMIT`` bytes; past it an event keeps a line
    saying how much was not kept, and ``not_kept`` counts those bytes."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.blobs: dict[str, bytes] = {}
        self.kept = 0
        """Bytes of content (previews and blobs) kept so far."""
        self.not_kept = 0
        """Bytes of content left out because the trial's cap was reached."""

    def record(
        self,
        kind: str,
        content: str | bytes | None = None,
        args: Mapping[str, object] | None = None,
        **fields: Unpack[EventFields],
    ) -> Event:
        """Append one event; a ``content`` longer than RESULT_PREVIEW_CHARS is cut and kept
        whole in ``blobs`` while the trial's cap allows. ``args`` is copied into the event as
        a dict (a TypedDict such as ``ModelCallInfo`` is fine)."""
        if isinstance(content, bytes):
            content = text.decode(content)
        blob_ref: str | None = None
        if content is not None and len(content) > RESULT_PREVIEW_CHARS:
            import hashlib

            # surrogatepass: the exact string, even one that is not valid Unicode
            data = content.encode("utf-8", errors="surrogatepass")
            ref = hashlib.sha256(data).hexdigest()
            if ref in self.blobs or self._keep(len(data)):
                self.blobs[ref] = data
                blob_ref = ref
                where = f"in blob {ref[:12]}"
            else:
                where = f"not kept: over the trial's cap of {TRIAL_OUTPUT_LIMIT} bytes"
            content = content[:RESULT_PREVIEW_CHARS] + f"\n…[truncated, {len(data)} bytes {where}]"
        if content is not None and not self._keep(len(content)):
            content = f"…[{len(content)} characters not kept: over the trial's cap]"
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

    def _keep(self, size: int) -> bool:
        """Count ``size`` bytes of content as kept if the trial's cap still allows them."""
        if self.kept + size > TRIAL_OUTPUT_LIMIT:
            self.not_kept += size
            return False
        self.kept += size
        return True

    def tool_calls(self) -> list[Event]:
        return [e for e in self.events if e.kind == "tool_call"]
