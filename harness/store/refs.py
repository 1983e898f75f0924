"""Run references: how a user names a run on the command line, resolved against a store.

Every command that takes a run accepts the same forms (README, "Naming a run"):

- ``latest``: the newest run in the store; ``latest~N``: the run N before it
  (``latest~0`` is ``latest``);
- a run id, or any prefix of one that only one run has (``20261201-2103``);
- any of those followed by ``:ARM`` to name one arm of the run (``latest:candidate``).

A reference that names nothing, or several runs, is a ``ConfigError`` (exit 2) that says
which: the store holds no runs, only N runs, or the runs the prefix matches.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from sqlmodel import Session, col, select

from harness.errors import ConfigError
from harness.store.db import Store, resolve_url
from harness.store.db import _redact as redact
from harness.store.tables import Run

LATEST = re.compile(r"^latest(?:~(\d+))?$")
SHOWN_MATCHES = 5


@dataclass(frozen=True)
class RunRef:
    """A reference split into its run part and its optional arm (``RUN:ARM``)."""

    run: str
    arm: str | None = None

    @classmethod
    def parse(cls, text: str) -> RunRef:
        run, sep, arm = text.partition(":")
        if sep and not arm:
            raise ConfigError(text, "", "nothing after ':' (write RUN:ARM)")
        return cls(run or "latest", arm or None)


def open_for_reading(url: str | None) -> Store:
    """The store at ``url`` (--store, $HARNESS_STORE or the default) for a command that only
    reads: one that does not exist is an exit-2 error and nothing is created."""
    return Store(resolve_url(url), create=False)


def find_run(store: Store, ref: str | None) -> Run:
    """The run ``ref`` names (``None``: the latest), or a ConfigError saying why none."""
    text = "latest" if ref is None else ref.strip()
    where = redact(store.url)
    latest = LATEST.match(text)
    if latest:
        skip = int(latest.group(1) or 0)
        # One read, so a run that starts meanwhile cannot make "no run yet" look like a
        # store short of runs (seen once in 100 iterations of benchmarks/store_concurrency.py).
        newest = store.list_runs(limit=skip + 1)
        if len(newest) > skip:
            return newest[skip]
        held = len(newest)
        if held == 0:
            raise ConfigError(where, "", "no runs yet in this store (start one: harness run SUITE)")
        raise ConfigError(where, "", f"{text}: the store holds only {held} run(s)")
    if not text:
        raise ConfigError("command line", "RUN", "empty run reference (latest, or a run id)")
    exact = store.get_run(text)
    if exact is not None:
        return exact
    matches = _runs_with_id_prefix(store, text, limit=SHOWN_MATCHES + 1)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ConfigError(
            where, "", f"no run with id '{text}' in this store (list them: harness runs)"
        )
    shown = ", ".join(r.id for r in matches[:SHOWN_MATCHES])
    more = " ..." if len(matches) > SHOWN_MATCHES else ""
    raise ConfigError(
        where, "", f"'{text}' is the start of several run ids ({shown}{more}); give more of it"
    )


def _runs_with_id_prefix(store: Store, prefix: str, limit: int) -> list[Run]:
    """Runs whose id starts with ``prefix`` (LIKE wildcards in it match themselves)."""
    with Session(store.engine) as s:
        q = (
            select(Run)
            .where(col(Run.id).startswith(prefix, autoescape=True))
            .order_by(col(Run.started_at).desc())
            .limit(limit)
        )
        return list(s.exec(q))


def find_run_and_arm(store: Store, ref: str | None) -> tuple[Run, str | None]:
    """``RUN[:ARM]``: the run and the arm named (checked to be one of the run's arms)."""
    parsed = RunRef.parse(ref) if ref is not None else RunRef("latest")
    run = find_run(store, parsed.run)
    if parsed.arm is not None and parsed.arm not in (run.arms or []):
        raise ConfigError(
            ref or "",
            "",
            f"run {run.id} has no arm '{parsed.arm}' (arms: {', '.join(run.arms or [])})",
        )
    return run, parsed.arm


def no_arm(ref: str | None, command: str, why: str) -> str | None:
    """``ref`` without an arm, for commands about a whole run; ``RUN:ARM`` is an exit-2
    error that says why the command takes no arm."""
    if ref is not None and RunRef.parse(ref).arm is not None:
        raise ConfigError(
            "command line", ref, f"`harness {command}` takes a run, not RUN:ARM: {why}"
        )
    return ref


def store_flag(store_url: str | None) -> str:
    """`` --store URL`` for a printed command, unless the store is the one a bare command
    opens ($HARNESS_STORE, else the default file); a password is shown as ***."""
    if store_url and store_url != resolve_url(None):
        return f" --store {shlex.quote(redact(store_url))}"
    return ""


def resume_command(run_id: str, store_url: str | None) -> str:
    """The command that resumes ``run_id`` in the store at ``store_url``."""
    return f"harness run --resume {run_id}{store_flag(store_url)}"


__all__ = [
    "RunRef",
    "find_run",
    "find_run_and_arm",
    "no_arm",
    "open_for_reading",
    "resume_command",
    "store_flag",
]
