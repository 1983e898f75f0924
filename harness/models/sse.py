"""Server-sent events: cut a byte stream into whole events without changing a byte.

The metering proxy relays a model's stream event by event: each event's raw bytes go to the
program as soon as the event is complete (so timing and content are the upstream's), while
the proxy reads the parsed copy for usage and the stream's end.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.jsontypes import JSONValue

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass(frozen=True)
class SSEEvent:
    raw: bytes
    """The event exactly as received, including its terminating blank line."""
    event: str | None
    data: str

    def json(self) -> JSONValue:
        """The data parsed as JSON, or None when it is not JSON (e.g. ``[DONE]``)."""
        try:
            value: JSONValue = json.loads(self.data)
            return value
        except ValueError:
            return None


class SSESplitter:
    """Feed bytes in any pieces; get back the events completed so far."""

    def __init__(self, max_event_bytes: int = 16 * 1024 * 1024):
        self._buf = bytearray()
        self.max_event_bytes = max_event_bytes

    def feed(self, data: bytes) -> list[SSEEvent]:
        self._buf += data
        events: list[SSEEvent] = []
        while True:
            m = _BOUNDARY.search(self._buf)
            if m is None:
                break
            raw = bytes(self._buf[: m.end()])
            del self._buf[: m.end()]
            events.append(parse_event(raw))
        if len(self._buf) > self.max_event_bytes:
            raise ValueError(f"a server-sent event exceeds {self.max_event_bytes} bytes")
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an event not yet completed (left over when a stream is cut)."""
        return bytes(self._buf)


def parse_event(raw: bytes) -> SSEEvent:
    event: str | None = None
    data: list[str] = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    return SSEEvent(raw=raw, event=event, data="\n".join(data))


def encode_event(event: str | None, data: object) -> bytes:
    """One event: ``event: NAME`` (when given) and the data as compact JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


__all__ = ["SSEEvent", "SSESplitter", "encode_event", "parse_event"]
