"""Writing the metering proxy's HTTP responses on an h11 connection: whole JSON bodies, or
server-sent events one by one, and quietly when the program has hung up."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

import anyio
import h11
from anyio.abc import SocketStream

from harness.models.api_types import OpenAIError


class Responder:
    """Writes one HTTP response on an h11 connection: whole, or streamed event by event."""

    def __init__(self, conn: h11.Connection, stream: SocketStream, redact: Callable[[str], str]):
        self.conn, self.stream, self.redact = conn, stream, redact
        self.started = False

    async def json(
        self, status: int, payload: Mapping[str, object], headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        data = self.redact(json.dumps(payload)).encode()
        head = [("content-type", "application/json"), ("content-length", str(len(data)))]
        await self._send(h11.Response(status_code=status, headers=head + list(headers)))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())

    async def start_stream(self, status: int) -> None:
        head = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
        await self._send(h11.Response(status_code=status, headers=head))

    async def event(self, raw: bytes) -> None:
        await self._send(h11.Data(data=raw))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())

    async def _send(self, event: h11.Response | h11.Data | h11.EndOfMessage) -> None:
        self.started = True
        await self.stream.send(self.conn.send(event))


def proxy_error(message: str, type_: str = "harness_proxy_error") -> OpenAIError:
    """The error object the proxy answers with (OpenAI's shape: message, type, code)."""
    return {"message": message, "type": type_, "code": type_}


class quiet_writes:
    """Suppress the errors of writing to a connection the program already closed."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        return kind is not None and issubclass(
            kind, (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, h11.ProtocolError)
        )
