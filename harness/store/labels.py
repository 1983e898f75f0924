"""People's labels of trials: written beside the trial, never over the judge's verdict.

A label says pass or fail for a trial as a whole (``criterion`` '') or for one judge
criterion, with who gave it, when, a note and where it came from (the viewer, or a labels
file). One person's newer label of the same trial and criterion replaces theirs in
``human_labels`` (the one every statistic reads: the newest counts), the same rule for the
viewer and for a labels file; the replaced label moves to ``human_labels_replaced``, kept
as history. Several people's labels of one trial are all kept (Krippendorff's α reads them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from harness.errors import ConfigError
from harness.store.tables import HumanLabel, ReplacedLabel, Trial

WRITE_ATTEMPTS = 5
"""Tries of one batch of labels against concurrent writers of the same labels."""


@dataclass(frozen=True)
class LabelIn:
    """One label to store."""

    trial_id: int
    passed: bool
    labeller: str
    criterion: str = ""
    note: str = ""
    source: str = "viewer"


def put_labels(engine: Engine, labels: list[LabelIn], at: Any) -> int:
    """Store ``labels``, each replacing the same person's earlier label of the same trial and
    criterion (moved to the history at ``at``); returns how many were written. Written at
    once or not at all; a concurrent writer of the same person's label (another viewer, a
    labels file) makes the unique key refuse one of the two, which is then tried again."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            _put(engine, labels, at)
            return len(labels)
        except IntegrityError:
            if attempt == WRITE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _put(engine: Engine, labels: list[LabelIn], at: Any) -> None:
    with Session(engine) as s:
        # Writers of one trial's labels wait for each other here on PostgreSQL (a row lock on
        # the trial, taken in id order); SQLite has one writer at a time and no row locks.
        for trial_id in sorted({label.trial_id for label in labels}):
            s.exec(select(Trial.id).where(Trial.id == trial_id).with_for_update()).first()
        for label in labels:
            old = s.exec(
                select(HumanLabel).where(
                    HumanLabel.trial_id == label.trial_id,
                    HumanLabel.criterion == label.criterion,
                    HumanLabel.labeller == label.labeller,
                )
            ).first()
            if old is not None:
                s.add(_replaced(old, at))
                s.delete(old)
                s.flush()
            s.add(
                HumanLabel(
                    trial_id=label.trial_id,
                    criterion=label.criterion,
                    passed=label.passed,
                    labeller=label.labeller,
                    note=label.note,
                    source=label.source,
                    labelled_at=at,
                )
            )
        s.commit()


def _replaced(old: HumanLabel, at: Any) -> ReplacedLabel:
    """The history row of ``old``: the same columns, and when it was replaced."""
    return ReplacedLabel(**old.model_dump(exclude={"id"}), replaced_at=at)


def run_labels(engine: Engine, run_id: str) -> list[HumanLabel]:
    """Every label of the run's trials, oldest first."""
    return _of_run(engine, HumanLabel, run_id)


def run_replaced_labels(engine: Engine, run_id: str) -> list[ReplacedLabel]:
    """Every label of the run's trials that a newer one by the same person replaced, oldest
    first (the history, for exports that must lose nothing the store knows)."""
    return _of_run(engine, ReplacedLabel, run_id)


_Row = TypeVar("_Row", HumanLabel, ReplacedLabel)


def _of_run(engine: Engine, table: type[_Row], run_id: str) -> list[_Row]:
    with Session(engine) as s:
        q = (
            select(table)
            .join(Trial, col(Trial.id) == col(table.trial_id))
            .where(Trial.run_id == run_id)
            .order_by(col(table.id))
        )
        return list(s.exec(q))


def trial_labels(engine: Engine, trial_id: int) -> list[HumanLabel]:
    """The labels in force of one trial (each person's newest per criterion), oldest first."""
    with Session(engine) as s:
        q = select(HumanLabel).where(HumanLabel.trial_id == trial_id)
        return list(s.exec(q.order_by(col(HumanLabel.id))))


def replaced_labels(engine: Engine, trial_id: int) -> list[ReplacedLabel]:
    """One trial's labels that a newer one by the same person replaced, oldest first."""
    with Session(engine) as s:
        q = select(ReplacedLabel).where(ReplacedLabel.trial_id == trial_id)
        return list(s.exec(q.order_by(col(ReplacedLabel.id))))


def _key(engine: Engine, run_id: str) -> dict[tuple[str, str, int, str], int]:
    with Session(engine) as s:
        rows = s.exec(select(Trial).where(Trial.run_id == run_id))
        return {
            (t.arm, t.task_id, t.trial_index, t.variant): t.id for t in rows if t.id is not None
        }


def read_labels_file(
    path: Path, engine: Engine, run_id: str, labeller: str | None
) -> list[LabelIn]:
    """Labels from a JSON-lines file, one object per line: the trial as ``trial`` (its id in
    the store) or as ``arm``, ``task`` and ``trial_index`` (and ``variant``); ``passed``
    (true/false); optional ``criterion``, ``labeller`` (default: ``labeller``), ``note``.
    A bad line is a one-line error naming the file, the line and the field."""
    keys = _key(engine, run_id)
    ids = set(keys.values())
    out: list[LabelIn] = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read the labels file: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise ConfigError(str(path), "", "not a JSON object", line=n) from None
        if not isinstance(item, dict):
            raise ConfigError(str(path), "", "not a JSON object", line=n)
        out.append(_label(item, path, n, keys, ids, labeller))
    return out


def _label(
    item: dict[str, Any],
    path: Path,
    n: int,
    keys: dict[tuple[str, str, int, str], int],
    ids: set[int],
    labeller: str | None,
) -> LabelIn:
    def bad(field: str, message: str) -> ConfigError:
        return ConfigError(str(path), field, message, line=n)

    if "trial" in item:
        trial_id = item["trial"]
        if not isinstance(trial_id, int) or trial_id not in ids:
            raise bad("trial", f"no trial {trial_id!r} in this run")
    else:
        for field in ("arm", "task", "trial_index"):
            if field not in item:
                raise bad(field, "missing (give 'trial', or 'arm', 'task' and 'trial_index')")
        key = (
            str(item["arm"]),
            str(item["task"]),
            item["trial_index"],
            str(item.get("variant", "")),
        )
        if not isinstance(key[2], int) or key not in keys:
            raise bad("task", f"no trial {key[0]}/{key[1]}/{key[2]} in this run")
        trial_id = keys[key]
    passed = item.get("passed")
    if not isinstance(passed, bool):
        raise bad("passed", f"must be true or false, got {passed!r}")
    who = item.get("labeller", labeller)
    if not isinstance(who, str) or not who.strip():
        raise bad("labeller", "missing: say who labelled (the field, or --labeller)")
    return LabelIn(
        trial_id=trial_id,
        passed=passed,
        labeller=who.strip(),
        criterion=str(item.get("criterion", "")),
        note=str(item.get("note", "")),
        source=f"file:{path.name}",
    )
