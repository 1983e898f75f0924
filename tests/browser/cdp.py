"""A minimal headless-Chromium driver over the DevTools protocol on a pipe (stdlib only).

``--remote-debugging-pipe`` makes Chromium read commands from fd 3 and write replies and
events to fd 4, as NUL-terminated JSON: no websocket, no extra dependency. Enough to load a
page, collect console messages, uncaught exceptions and log errors (CSP violations, failed
requests), read the DOM and navigation timing, and take a screenshot.

Every browser gets a fresh profile and no network beyond what the page asks for: background
networking, sync, component updates, QUIC and first-run tasks are off.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--remote-debugging-pipe",
]


def chromium_path() -> str | None:
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLoad:
    url: str
    console: list[dict[str, Any]] = field(default_factory=list)
    """Runtime.consoleAPICalled events: {"type": "error"|"log"|..., "text": ...}."""
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    """Log.entryAdded at level error (CSP violations, failed loads, ...)."""
    dom: str = ""
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        """Everything that counts as a console error."""
        return (
            [c["text"] for c in self.console if c["type"] in ("error", "assert")]
            + self.exceptions
            + self.log_errors
        )


class CDPError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary: str | None = None, width: int = 1400, height: int = 2000):
        binary = binary or chromium_path()
        if not binary:
            raise FileNotFoundError("chromium not found")
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="harness-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        res_r, res_w = os.pipe()  # Chromium writes fd 4, we read

        def child_fds() -> None:  # runs in the child between fork and exec
            a, b = os.dup(cmd_r), os.dup(res_w)  # move out of the way of 3 and 4
            os.dup2(a, 3)  # dup2 targets are inheritable; os.pipe()'s originals are not
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                binary,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=child_fds,  # noqa: PLW1509 - test helper, single-threaded at spawn
            close_fds=False,  # else fds 3 and 4 are closed after preexec_fn (PEP 446 keeps
            # every other descriptor of ours non-inheritable, so nothing else leaks)
        )
        os.close(cmd_r)
        os.close(res_w)
        self._out = os.fdopen(cmd_w, "wb", buffering=0)
        self._in = os.fdopen(res_r, "rb", buffering=0)
        self._next_id = 0
        self._replies: dict[int, queue.Queue] = {}
        self._events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._drain, daemon=True).start()

    # -- transport ------------------------------------------------------------------
    def _drain(self) -> None:
        for line in self.proc.stderr:  # keep the pipe from filling; kept for debugging
            self._stderr.append(line)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self._in.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        q = self._replies.get(msg["id"])
                    if q is not None:
                        q.put(msg)
                else:
                    self._events.put(msg)

    def send(
        self,
        method: str,
        params: dict | None = None,
        session: str | None = None,
        timeout: float = 30,
    ) -> dict:
        with self._lock:
            self._next_id += 1
            mid = self._next_id
            q: queue.Queue = queue.Queue()
            self._replies[mid] = q
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._out.write(json.dumps(msg).encode() + b"\0")
        try:
            reply = q.get(timeout=timeout)
        except queue.Empty as exc:
            raise CDPError(f"{method}: no reply in {timeout}s") from exc
        finally:
            with self._lock:
                self._replies.pop(mid, None)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    # -- pages ----------------------------------------------------------------------
    def open(self, url: str, timeout: float = 60, settle: float = 0.2) -> tuple[PageLoad, str]:
        """Load ``url`` in a new tab; returns what happened and the tab's session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self._flush_events()
        load = PageLoad(url)
        self.send("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + timeout
        loaded_at = None
        while True:
            now = time.monotonic()
            if loaded_at is not None and now - loaded_at >= settle:
                break
            if now > deadline:
                raise CDPError(f"{url}: no load event in {timeout}s")
            try:
                ev = self._events.get(timeout=0.05)
            except queue.Empty:
                continue
            if ev.get("sessionId") != session:
                continue
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Page.loadEventFired" and loaded_at is None:
                loaded_at = time.monotonic()
            elif method == "Runtime.consoleAPICalled":
                text = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
                )
                load.console.append({"type": p.get("type"), "text": text})
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                load.exceptions.append(
                    d.get("exception", {}).get("description") or d.get("text", "exception")
                )
            elif method == "Log.entryAdded":
                entry = p.get("entry", {})
                if entry.get("level") == "error":
                    load.log_errors.append(f"{entry.get('source')}: {entry.get('text')}")
        load.dom = self.eval("document.documentElement.outerHTML", session)
        nav = self.eval(
            "JSON.stringify(performance.getEntriesByType('navigation')[0] || {})", session
        )
        load.timing = {k: v for k, v in json.loads(nav).items() if isinstance(v, int | float)}
        return load, session

    def eval(self, expression: str, session: str) -> Any:
        r = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
        )
        if "exceptionDetails" in r:
            raise CDPError(f"evaluate failed: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def screenshot(self, session: str, path: str | Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            h = self.eval("document.documentElement.scrollHeight", session)
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": h, "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params, session=session)["data"]
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(data))
        return out

    def close_tab(self, session: str) -> None:
        try:
            info = self.send("Target.getTargetInfo", session=session)
            self.send("Target.closeTarget", {"targetId": info["targetInfo"]["targetId"]})
        except CDPError:
            pass

    def _flush_events(self) -> None:
        while True:
            try:
                self._events.get_nowait()
            except queue.Empty:
                return

    def close(self) -> None:
        with contextlib.suppress(CDPError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self._out, self._in):
            with contextlib.suppress(OSError):
                f.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
