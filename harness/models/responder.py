"""The metering proxy's HTTP on an h11 connection: reading requests (keep-alive, bounded
bodies), and writing responses — whole JSON bodies, or server-sent events one by one, and
quietly when the program has hung up."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType

import anyio
import h11
from anyio.abc import SocketStream

from harness.models.api_types import OpenAIError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024
Handler = Callable[[h11.Request, bytes, "Responder"], Awaitable[None]]


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


async def serve_connection(
    stream: SocketStream,
    handle: Handler,
    redact: Callable[[str], str],
    error_headers: Sequence[tuple[str, str]] = (),
) -> None:
    """Serve requests on one connection until either side closes it: each request is read
    whole and passed to ``handle``; a malformed one gets a 400, a bug of ours a 500 (with
    ``error_headers``) when nothing was sent yet, and is logged."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
    async with stream:
        while True:
            try:
                request, body = await _read_request(conn, stream)
            except (h11.RemoteProtocolError, ValueError) as exc:
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    with quiet_writes():
                        await Responder(conn, stream, str).json(
                            400, {"error": proxy_error(str(exc), "bad")}
                        )
                return
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            if request is None:
                return
            out = Responder(conn, stream, redact)
            try:
                await handle(request, body, out)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return  # the program hung up
            except Exception:  # a bug of ours: answer if we still can, log, keep serving
                log.exception("metering proxy failed on %s", request.target)
                if out.started:
                    return
                with quiet_writes():
                    await out.json(500, {"error": proxy_error("proxy error")}, error_headers)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:
                return


async def _read_request(
    conn: h11.Connection, stream: SocketStream
) -> tuple[h11.Request | None, bytes]:
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive(65536)
            except anyio.EndOfStream:
                data = b""
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY_BYTES:
                raise ValueError("request body too large")
        elif isinstance(event, h11.EndOfMessage):
            return request, bytes(body)
        else:  # ConnectionClosed or PAUSED
            return None, b""
