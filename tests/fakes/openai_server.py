"""A real HTTP server on 127.0.0.1 that speaks the model APIs from a script.

It serves OpenAI chat completions (``/v1/chat/completions``), OpenAI Responses
(``/v1/responses``) and Anthropic Messages (``/v1/messages``), each plain or streamed
(server-sent events). Tests push replies onto a queue; each POST pops one (or calls it, when
it is a function of the request). A ``Turn`` (``tests/fakes/llm_wire.py``) is rendered in the
format of the API and the streaming mode the request asked for, so one script drives any
client. Every request is recorded with its headers and body, so a test can assert what
arrived (e.g. that the API key header reached the server and nothing else did).

    with FakeOpenAI() as server:
        server.push(completion(tool_calls=[call("get", {"key": "a"})]), completion("done"))
        settings = ModelSettings(name="fake", base_url=server.base_url, api_key_env="KEY")

Faults: ``rate_limited`` (429 + Retry-After), ``server_error`` (500), ``slow`` (sleeps
longer than the client's timeout), ``malformed`` (200 with invalid JSON), ``truncated``
(the connection closes mid-body), ``cut_stream`` (a stream that stops after some events,
without its terminal event), and any tool call naming a tool that does not exist.
When the queue is empty the server answers with ``default`` (418 "script exhausted" unless
set), so a test that calls more than it scripted fails loudly. ``GET …/models`` (the
harness's endpoint probe) answers ``models`` when set, else a list holding ``fake-model``.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.llm_wire import Turn, api_of, render


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """A dict/list (sent as JSON), bytes or str (sent as is)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    truncate: bool = False
    """Announce the full Content-Length, send half the body, then close the connection."""
    events: list[bytes] | None = None
    """Server-sent events, sent one by one (chunked); ``body`` is then ignored."""
    event_delay_s: float = 0.0
    """Pause before each event (to observe that a relay keeps the timing)."""
    cut_after: int | None = None
    """Send only this many events, then drop the connection without ending the stream."""

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body if self.body is not None else {}).encode()


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Script = Reply | Turn | Callable[[RecordedRequest], "Reply | Turn"]
_ids = itertools.count(1)


# ------------------------------------------------------------------------------ replies
def call(name: str, args: dict[str, Any] | str | None = None, id: str | None = None) -> dict:
    """One tool call; ``args`` as a dict (sent as JSON text) or raw text (e.g. broken JSON)."""
    text = args if isinstance(args, str) else json.dumps(args or {})
    return {
        "id": id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": text},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict] | None = None,
    usage: tuple[int, int] | None = (100, 10),
    cached: int = 0,
    model: str = "fake-model",
    finish_reason: str | None = None,
) -> Reply:
    """A chat completion; ``usage`` is (prompt_tokens, completion_tokens) or None (no block)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": cached},
        }
    return Reply(body=body)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "fake_error"}},
        headers=headers or {},
    )


def rate_limited(retry_after: str = "0.2") -> Reply:
    return error(429, "rate limited", {"Retry-After": retry_after})


def server_error(status: int = 500) -> Reply:
    return error(status, "internal error")


def slow(delay_s: float, reply: Reply | None = None) -> Reply:
    base = reply or completion("slow answer")
    return Reply(base.status, base.body, dict(base.headers), delay_s=delay_s)


def malformed() -> Reply:
    return Reply(200, b'{"id": "chatcmpl-x", "choices": [{"message": {"content": "hel')


def truncated() -> Reply:
    return Reply(200, completion("this will be cut").body, truncate=True)


def turn_reply(turn: Turn, req: RecordedRequest, **stream: Any) -> Reply:
    """``turn`` rendered for the request's API and streaming mode."""
    body, events = render(turn, api_of(req.path) or "chat", req.json or {})
    if events is None:
        return Reply(body=body)
    return Reply(events=events, **stream)


def cut_stream(turn: Turn | None = None, after: int = 3) -> Callable[[RecordedRequest], Reply]:
    """A stream that stops after ``after`` events, without its terminal event."""
    return lambda req: turn_reply(turn or Turn("this stream is cut short"), req, cut_after=after)


def slow_stream(turn: Turn, delay_s: float) -> Callable[[RecordedRequest], Reply]:
    """A stream with a pause before every event."""
    return lambda req: turn_reply(turn, req, event_delay_s=delay_s)


# ------------------------------------------------------------------------------ server
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        req = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.fake._add(req)
        return req

    def do_GET(self) -> None:
        self._record()
        if self.path.rstrip("/").endswith("/models"):
            fake = self.server.fake
            self._send(
                fake.models or Reply(body={"object": "list", "data": [{"id": "fake-model"}]})
            )
        else:
            self._send(error(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        req = self._record()
        if api_of(self.path) is None:
            self._send(error(404, f"no route {self.path}"))
            return
        reply = self.server.fake._next(req)
        if reply.events is not None:
            self._send_events(reply)
        else:
            self._send(reply)

    def _send_events(self, reply: Reply) -> None:
        if reply.delay_s:
            time.sleep(reply.delay_s)
        events = reply.events or []
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n, event in enumerate(events):
                if reply.cut_after is not None and n >= reply.cut_after:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.event_delay_s:
                    time.sleep(reply.event_delay_s)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _send(self, reply: Reply) -> None:
        if reply.delay_s:
            time.sleep(reply.delay_s)
        data = reply.payload()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data) + (100 if reply.truncate else 0)))
            self.end_headers()
            if reply.truncate:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self.wfile.write(data)
        except OSError:  # the client gave up (timeout) and closed the connection
            self.close_connection = True


class FakeOpenAI:
    """The scripted server. Use as a context manager or call ``start``/``stop``."""

    def __init__(self, default: Script | None = None):
        self.default: Script = default or error(418, "fake server: script exhausted")
        self.models: Reply | None = None
        """The answer to ``GET …/models`` (default: a list holding ``fake-model``)."""
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------
    def push(self, *replies: Script) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        return len(self._queue)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def model_requests(self) -> list[RecordedRequest]:
        """Every POST to one of the served APIs."""
        return [r for r in self.requests if r.method == "POST" and api_of(r.path)]

    def _add(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _next(self, req: RecordedRequest) -> Reply:
        with self._lock:
            item = self._queue.popleft() if self._queue else self.default
        reply = item(req) if callable(item) else item
        return turn_reply(reply, req) if isinstance(reply, Turn) else reply

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> FakeOpenAI:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "Turn",
    "call",
    "completion",
    "cut_stream",
    "error",
    "malformed",
    "rate_limited",
    "server_error",
    "slow",
    "slow_stream",
    "truncated",
    "turn_reply",
]
