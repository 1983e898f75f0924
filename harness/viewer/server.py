"""`harness view`: a web UI over the store, on loopback only; it writes only people's labels.

Standard library server (``http.server.ThreadingHTTPServer``); pages are Jinja2 templates in
``harness/viewer/templates`` (autoescaped), on the report's page shell. Routes:

    /                         runs, newest first
    /run/RUN_ID               arms with their rates, and the task table
    /run/RUN_ID/report        the full HTML report (as `harness html` writes it)
    /run/RUN_ID/trials        trials, filtered by ?arm=&task=&status=&labelled= (paged)
    /trial/ID                 one trial: transcript, grader evidence, seed, image, cost
    /blob/SHA256              a full tool result, as plain text
    POST /trial/ID/label      store a person's label of the trial (``labelling.post_label``)

The server binds 127.0.0.1 and answers only requests whose Host header names the loopback
interface (so a web page elsewhere cannot read the store through DNS rebinding). A POST also
needs the server's random token from the form, and a loopback Origin when it names one; no
page may be framed by another (X-Frame-Options, frame-ancestors).
"""

from __future__ import annotations

import secrets
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from harness.report.render.templating import render_template
from harness.text import utf8
from harness.viewer import DEFAULT_PORT

HOST = "127.0.0.1"
TRIALS_PAGE = 200
ALLOWED_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store_url: str, port: int = DEFAULT_PORT, labeller: str = ""):
        from harness.store import Store, resolve_url

        self.store = Store(resolve_url(store_url))
        self.store_url = self.store.url
        self.token = secrets.token_urlsafe(32)
        """Put in every label form; a POST without it is refused (see ``labelling``)."""
        self.labeller = labeller
        """The name a label form starts with when the browser has none remembered."""
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()
        self.label_lock = threading.Lock()
        """Held while a label is stored: a person's posts of one trial at once (a double
        click) would otherwise both find no earlier label and both insert one."""
        super().__init__((HOST, port), Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"

    def cached(self, key: str, build) -> str:
        """Pages of finished runs never change: build them once."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        html = build()
        with self._lock:
            self._cache[key] = html
        return html

    def forget(self, run_id: str) -> None:
        """Drop a run's cached pages (a new label changes its judge agreement)."""
        with self._lock:
            for key in (f"run:{run_id}", f"report:{run_id}"):
                self._cache.pop(key, None)


def make_server(
    store_url: str | None, port: int = DEFAULT_PORT, labeller: str = ""
) -> ViewerServer:
    """A server bound to 127.0.0.1:port (0 picks a free port); call serve_forever().
    ``labeller``: the name label forms start with."""
    return ViewerServer(store_url or "", port, labeller)


class Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "harness-view"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: the terminal shows the URL, not every request

    def _loopback(self) -> bool:
        """The request names this machine's loopback (else 403 is sent)."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in ALLOWED_HOSTS:
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"loopback only")
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if not self._loopback():
            return
        parts = urlsplit(self.path)
        path = [unquote(p) for p in parts.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self._guarded(lambda: self._route(path, query))

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        from harness.viewer import labelling

        if not self._loopback():
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc.rsplit(":", 1)[0] not in ALLOWED_HOSTS:
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"posted from another site")
            return
        path = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
        if len(path) != 3 or path[0] != "trial" or not path[1].isdigit() or path[2] != "label":
            return self._not_found("nothing to post here")
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > labelling.MAX_FORM_BYTES:
            body = b"a label form has a Content-Length of at most 64 KiB"
            return self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "text/plain", body)
        data = self.rfile.read(int(length))

        def reply() -> None:
            from harness.viewer.trial_page import render_trial

            content_type = self.headers.get("Content-Type", "")
            r = labelling.post_label(self.server, int(path[1]), content_type, data, render_trial)
            self._send(HTTPStatus(r.status), "text/html; charset=utf-8", utf8(r.body), r.headers)

        self._guarded(reply)

    def _guarded(self, handle) -> None:
        try:
            handle()
        except Exception:  # noqa: BLE001 - one broken page must not stop the server
            body = _page(
                "message.html.j2",
                title="error",
                nav=False,
                heading="Internal error",
                detail_pre=traceback.format_exc(),
            )
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "text/html; charset=utf-8", utf8(body))

    def _route(self, path: list[str], query: dict[str, str]) -> None:
        store = self.server.store
        if not path:
            return self._html(runs_page(store))
        if path[0] == "favicon.ico":
            return self._send(HTTPStatus.NO_CONTENT, "image/x-icon", b"")
        if path[0] == "run" and len(path) >= 2:
            run = store.get_run(path[1])
            if run is None:
                return self._not_found(f"no run '{path[1]}'")
            if len(path) == 2:
                key = f"run:{run.id}"
                build = lambda: run_page(self.server.store_url, run)  # noqa: E731
                return self._html(
                    self.server.cached(key, build) if run.status == "finished" else build()
                )
            if path[2] == "report":
                from harness.report.html_page import build_html

                build = lambda: build_html(run.id, self.server.store_url, viewer_url="")  # noqa: E731
                key = f"report:{run.id}"
                return self._html(
                    self.server.cached(key, build) if run.status == "finished" else build()
                )
            if path[2] == "trials":
                return self._html(trials_page(store, run, query))
        if path[0] == "trial" and len(path) == 2 and path[1].isdigit():
            from harness.viewer.labelling import LabelForm, labeller_from_cookie
            from harness.viewer.trial_page import render_trial

            who = labeller_from_cookie(self.headers.get("Cookie")) or self.server.labeller
            body = render_trial(store, int(path[1]), LabelForm(self.server.token, who))
            if body is None:
                return self._not_found(f"no trial {path[1]}")
            return self._html(body)
        if path[0] == "blob" and len(path) == 2:
            data = store.blob(path[1])
            if data is None:
                return self._not_found("no such blob")
            return self._send(HTTPStatus.OK, "text/plain; charset=utf-8", data)
        return self._not_found("no such page")

    def _html(self, html: str) -> None:
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", utf8(html))

    def _not_found(self, what: str) -> None:
        body = _page("message.html.j2", title="not found", heading="Not found", detail=what)
        self._send(HTTPStatus.NOT_FOUND, "text/html; charset=utf-8", utf8(body))

    def _send(
        self, status: HTTPStatus, ctype: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        # No page of the viewer may be framed: a page elsewhere could overlay the label form
        # and have a click post it (the token does not help against that).
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)


def _page(template: str, **context: Any) -> str:
    """A viewer page from its template (the viewer's templates, then the report's)."""
    return render_template(template, packages=("harness.viewer",), **context)


def runs_page(store) -> str:
    """Every run, newest first, with links to its page and its report."""
    return _page(
        "runs.html.j2",
        title="harness runs",
        runs=store.list_runs(limit=500),
        store_url=_safe_url(store.url),
    )


def _safe_url(url: str) -> str:
    """The store URL without a password."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url


def run_page(store_url: str, run) -> str:
    """Arms with their rates, and the per-task table linking to trials."""
    from harness.analysis.load import TASK_TABLE
    from harness.report import tasks as tk
    from harness.report.cli import load_report_table, report_of
    from harness.report.render import html as report_html
    from harness.report.render import html_sections as hs
    from harness.store import Store
    from harness.viewer.labelling import label_progress

    store = Store(store_url)
    try:
        table = load_report_table(store, run, TASK_TABLE)
        labelled = label_progress(store.engine, run.id)
    finally:
        store.close()
    data = report_of(run, table)
    tasks = tk.task_counts(table.trials, data)
    colors = hs.arm_colors(tasks.arms)
    return _page(
        "run.html.j2",
        title=f"run {run.id}",
        run_id=run.id,
        header=report_html.header(data, tasks, colors),
        headline=report_html.headline(data, tasks, colors),
        tasks=hs.task_table(tasks, "", task_link=f"/run/{run.id}/trials?task="),
        labelled=labelled,
    )


TRIAL_LABELS = (
    "SELECT COUNT(*) FROM human_labels h WHERE h.trial_id = trials.id AND h.criterion = ''"
)
"""People's labels of a trial as a whole (``harness.store.labels``)."""
TRIAL_COLUMNS = (
    "id, arm, task_id, variant, trial_index, status, failure_kind, score, reason, cost_usd, "
    f"latency_s, tokens_in, tokens_out, ({TRIAL_LABELS}) AS labels"
)


def trials_page(store, run, query: dict[str, str]) -> str:
    """The run's trials filtered by arm, task, status, class or whether people labelled them
    (``labelled=yes|no``), a page at a time."""
    from sqlalchemy import text

    where = ["run_id = :r"]
    params: dict[str, str | int] = {"r": run.id}
    for key, col in (
        ("arm", "arm"),
        ("task", "task_id"),
        ("status", "status"),
        ("class", "task_class"),
    ):
        if query.get(key):
            where.append(f"{col} = :{key}")
            params[key] = query[key]
    if query.get("labelled") in ("yes", "no"):
        where.append(f"({TRIAL_LABELS}) {'>' if query['labelled'] == 'yes' else '='} 0")
    page_no = max(0, int(query.get("page", "0") or 0)) if query.get("page", "0").isdigit() else 0
    params["lim"], params["off"] = TRIALS_PAGE, page_no * TRIALS_PAGE
    cond = " AND ".join(where)
    with store.engine.connect() as conn:
        total = conn.execute(text(f"SELECT COUNT(*) FROM trials WHERE {cond}"), params).scalar()
        rows = conn.execute(
            text(
                f"SELECT {TRIAL_COLUMNS} FROM trials WHERE {cond} "
                "ORDER BY task_id, arm, trial_index, id LIMIT :lim OFFSET :off"
            ),
            params,
        ).all()
    rest = _drop(query, "page")
    return _page(
        "trials.html.j2",
        title=f"trials of {run.id}",
        run_id=run.id,
        total=total,
        rows=[r._mapping for r in rows],
        filters=" · ".join(f"{k} = {v}" for k, v in query.items() if k != "page" and v),
        arm_links=[(a, urlencode({**rest, "arm": a})) for a in run.arms or []],
        status_links=[
            (s, urlencode({**rest, "status": s}))
            for s in ("passed", "failed", "infra_error", "grader_error", "harness_error")
        ],
        label_links=[
            (shown, urlencode({**rest, "labelled": v}))
            for shown, v in (("some", "yes"), ("none", "no"))
        ],
        previous=urlencode({**query, "page": page_no - 1}) if page_no > 0 else None,
        next=(
            urlencode({**query, "page": page_no + 1})
            if (page_no + 1) * TRIALS_PAGE < total
            else None
        ),
    )


def _drop(d: dict[str, str], key: str) -> dict[str, str]:
    return {k: v for k, v in d.items() if k != key}


def serve(
    store_url: str | None, port: int = DEFAULT_PORT, page: str = "/", labeller: str = ""
) -> None:
    """Serve until interrupted (Ctrl-C); the line printed names ``page`` on the server."""
    server = make_server(store_url, port, labeller)
    print(
        f"harness view: {server.url}{page}  (store {_safe_url(server.store_url)}; Ctrl-C to stop)"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.store.close()


__all__ = ["HOST", "ViewerServer", "make_server", "serve"]
