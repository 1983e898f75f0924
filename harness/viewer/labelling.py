"""Labelling a trial in `harness view`: the form on the trial page, checked, then stored.

A person says pass or fail for the trial, and optionally for each judge criterion the
trial's evidence names, with a note, under their name. The labels go to ``human_labels``
through ``harness.store.labels.put_labels``, the same path a labels file takes, so the same
rule holds: a person's newest label of a trial (or criterion) counts and their earlier one
moves to the history. The trial's verdict is never written.

The form carries a random token made when the server starts; a POST without it is refused,
so another web page open in the same browser cannot post labels (it cannot read the token:
the viewer's pages are same-origin only, and foreign Host headers are refused).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from harness.store.labels import LabelIn, replaced_labels, trial_labels

LABELLER_COOKIE = "harness_labeller"
MAX_FORM_BYTES = 64 * 1024
MAX_NAME = 100
MAX_NOTE = 4000
FIELDS = ("token", "labeller", "passed", "note")
VERDICTS = {"pass": True, "fail": False}


class LabelRejected(ValueError):
    """The form cannot be stored as it is; the message says what to fix."""


@dataclass
class LabelForm:
    """What the trial page's form shows: the token, the name to prefill, and after a
    rejected POST the message and the values posted (shown again)."""

    token: str
    labeller: str = ""
    error: str = ""
    values: dict[str, str] = field(default_factory=dict)


def judge_criteria(graders: list[Any]) -> list[dict[str, Any]]:
    """The judge criteria of a trial's verdicts, in order: id and the judge's verdict."""
    out: dict[str, dict[str, Any]] = {}
    for g in graders:
        judge = (g.get("details") or {}).get("judge") if isinstance(g, Mapping) else None
        if not isinstance(judge, Mapping):
            continue
        for c in judge.get("criteria") or []:
            if isinstance(c, Mapping) and isinstance(c.get("id"), str):
                out.setdefault(c["id"], {"id": c["id"], "judge_passed": c.get("passed")})
    return list(out.values())


def parse_form(body: bytes) -> dict[str, str]:
    """An urlencoded form body as name → value (a repeated name keeps its last value)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise LabelRejected("the form is not UTF-8") from None
    return dict(parse_qsl(text, keep_blank_values=True))


def token_ok(form: Mapping[str, str], token: str) -> bool:
    return hmac.compare_digest(form.get("token", "").encode(), token.encode())


def _note(form: Mapping[str, str], key: str) -> str:
    note = form.get(key, "").strip()
    if len(note) > MAX_NOTE:
        raise LabelRejected(
            f"the note is too long ({len(note):,} characters; at most {MAX_NOTE:,})"
        )
    return note


def labels_from_form(trial_id: int, form: Mapping[str, str], criteria: list[str]) -> list[LabelIn]:
    """The labels a posted form asks for; ``LabelRejected`` (nothing stored) when the name is
    missing, the trial has no pass/fail, or a field names a criterion the judge does not have."""
    who = form.get("labeller", "").strip()
    if not who:
        raise LabelRejected("say who is labelling: the name field is empty")
    if len(who) > MAX_NAME or not who.isprintable():
        raise LabelRejected(f"the name must be printable and at most {MAX_NAME} characters")
    if form.get("passed") not in VERDICTS:
        raise LabelRejected("choose pass or fail for the trial")
    labels = [LabelIn(trial_id, VERDICTS[form["passed"]], who, "", _note(form, "note"))]
    for key, value in form.items():
        kind, _, name = key.partition(":")
        if key in FIELDS:
            continue
        if kind not in ("criterion", "note") or not name:
            raise LabelRejected(f"unknown form field '{key}'")
        if name not in criteria:
            known = ", ".join(criteria) or "none: this trial was not judged"
            raise LabelRejected(
                f"no criterion '{name}' in this trial's judge (its criteria: {known})"
            )
        if kind == "note" and value.strip() and not form.get(f"criterion:{name}"):
            raise LabelRejected(f"criterion '{name}' has a note but no pass or fail")
        if kind == "criterion" and value:
            if value not in VERDICTS:
                raise LabelRejected(f"criterion '{name}': choose pass, fail or not labelled")
            note = _note(form, f"note:{name}")
            labels.append(LabelIn(trial_id, VERDICTS[value], who, name, note))
    return labels


def _row(label: Any) -> dict[str, Any]:
    return {
        "labeller": label.labeller,
        "of": f"criterion {label.criterion}" if label.criterion else "the trial",
        "passed": label.passed,
        "note": label.note,
        "source": label.source,
        "when": f"{label.labelled_at:%Y-%m-%d %H:%M:%S}",
        "replaced": (
            f"{label.replaced_at:%Y-%m-%d %H:%M:%S}" if hasattr(label, "replaced_at") else ""
        ),
    }


def labels_view(engine: Any, trial_id: int) -> dict[str, list[dict[str, Any]]]:
    """The trial's labels in force and the replaced ones, as the template shows them."""
    return {
        "current": [_row(x) for x in trial_labels(engine, trial_id)],
        "replaced": [_row(x) for x in replaced_labels(engine, trial_id)],
    }


@dataclass
class Reply:
    """What the server sends back for a POST."""

    status: int
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)


def post_label(
    server: Any,
    trial_id: int,
    content_type: str,
    body: bytes,
    render_trial: Callable[[Any, int, LabelForm], str | None],
) -> Reply:
    """Check and store one posted label form for ``trial_id``: 303 back to the trial page
    when stored; 403 without the server's token; 400 with the message on the page (and
    nothing stored) for bad input; 404 for no such trial. ``render_trial`` draws that page
    (``trial_page.render_trial``, which shows this module's form: passed in, not imported)."""
    from urllib.parse import quote

    from harness.store import now
    from harness.store.labels import put_labels

    ctype = content_type.split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        return _message(400, "Not a label form", "labels are posted by the trial page's form")
    try:
        form = parse_form(body)
    except LabelRejected as exc:
        return _message(400, "Not a label form", str(exc))
    if not token_ok(form, server.token):
        return _message(
            403,
            "Refused",
            "the form's token is missing or wrong (it changes when harness view restarts): "
            "reload the trial page and label again. Nothing was stored.",
        )
    trial = server.store.trial(trial_id)
    if trial is None:
        return _message(404, "Not found", f"no trial {trial_id}")
    try:
        evidence = trial.evidence or {}
        criteria = [c["id"] for c in judge_criteria(evidence.get("graders") or [])]
        labels = labels_from_form(trial_id, form, criteria)
    except LabelRejected as exc:
        state = LabelForm(server.token, form.get("labeller", ""), f"Not stored: {exc}.", form)
        return Reply(400, render_trial(server.store, trial_id, state) or "")
    with server.label_lock:
        put_labels(server.store.engine, labels, now())
    server.forget(trial.run_id)  # its cached pages show the judge's agreement with labels
    cookie = f"{LABELLER_COOKIE}={quote(labels[0].labeller)}; Path=/; Max-Age=31536000"
    return Reply(
        303,
        headers={
            "Location": f"/trial/{trial_id}#labels",
            "Set-Cookie": f"{cookie}; SameSite=Strict; HttpOnly",
        },
    )


def _message(status: int, heading: str, detail: str) -> Reply:
    from harness.report.render.templating import render_template

    body = render_template(
        "message.html.j2",
        packages=("harness.viewer",),
        title=heading,
        heading=heading,
        detail=detail,
    )
    return Reply(status, body)


def labeller_from_cookie(header: str | None) -> str:
    """The name the browser last labelled under ('' when none)."""
    from http.cookies import CookieError, SimpleCookie
    from urllib.parse import unquote

    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header or "")
    except CookieError:
        return ""
    morsel = jar.get(LABELLER_COOKIE)
    return unquote(morsel.value)[:MAX_NAME] if morsel is not None else ""


def next_to_label(engine: Any, run_id: str, trial_id: int, labeller: str) -> int | None:
    """The run's next trial after ``trial_id`` (in id order, wrapping round) that has no label
    of the trial as a whole by ``labeller`` (by anyone when no name is known), or None."""
    from sqlalchemy import text

    by = " AND h.labeller = :who" if labeller else ""
    sql = text(
        "SELECT id FROM trials WHERE run_id = :r AND id != :t AND NOT EXISTS (SELECT 1 FROM "
        f"human_labels h WHERE h.trial_id = trials.id AND h.criterion = ''{by}) "
        "ORDER BY CASE WHEN id > :t THEN 0 ELSE 1 END, id LIMIT 1"
    )
    with engine.connect() as conn:
        return conn.execute(sql, {"r": run_id, "t": trial_id, "who": labeller}).scalar()


def label_progress(engine: Any, run_id: str) -> dict[str, int]:
    """How far people have labelled a run: its trials, those with a label of the trial as a
    whole, and how many people gave them."""
    from sqlalchemy import text

    sql = text(
        "SELECT COUNT(DISTINCT t.id), COUNT(DISTINCT h.trial_id), COUNT(DISTINCT h.labeller) "
        "FROM trials t LEFT JOIN human_labels h ON h.trial_id = t.id AND h.criterion = '' "
        "WHERE t.run_id = :r"
    )
    with engine.connect() as conn:
        total, trials, people = conn.execute(sql, {"r": run_id}).one()
    return {"total": int(total), "trials": int(trials), "people": int(people)}
