"""The one loader: a run's rows in the store → its ``RunTable``.

The queries live with the store (``harness.store.queries``, where the packing is
explained); here each packed text becomes a numpy array and each group row's labels become
codes. Callers name the fields they read beyond the ones always there (``ALWAYS``), so a
million-trial report moves no column it does not use. No SQL here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.analysis.table import Labels, Trials
from harness.store.queries import GROUP_FIELDS, Note

ALWAYS = frozenset({"status", "usage_known", "attempts", "steps", "trial_index"})
"""Loaded whatever the caller asks (with the labels and weights): they travel together."""
OPTIONAL = {
    "confidence": ("confidence",),
    "latency": ("latency",),
    "cost": ("cost",),
    "harm": ("harm",),
    "score": ("score",),
    "tokens": ("tokens_in", "tokens_cached", "tokens_out"),
    "seed": ("seed",),
    "id": ("id",),
}
"""What a caller may ask for → the packed columns that carry it."""
DECISIONS = frozenset({"cost", "seed"})
"""What compare, gate, history and plan read."""
REPORT = frozenset({"confidence", "latency", "cost", "harm", "tokens", "score"})
"""What the report reads (and ``seed`` when it compares two arms)."""
TASK_TABLE = frozenset({"id"})
"""What the HTML page's per-task table reads (trial ids to link to)."""
_G = {name: i for i, name in enumerate(GROUP_FIELDS)}


@dataclass
class RunTable:
    """Everything the analyses read about one run's trials."""

    run_id: str
    trials: Trials
    attempts: dict[str, dict[str, int]] = field(default_factory=dict)
    """arm → attempt outcome → count."""
    attempt_cost: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)
    """arm → attempt outcome → (summed known cost in US dollars, attempts with a known cost)."""
    retried: dict[str, int] = field(default_factory=dict)
    """arm → trials that took more than one attempt (infrastructure retries)."""
    notes: list[Note] = field(default_factory=list)
    """Reason and error of each trial without a verdict and each failure the agent caused,
    oldest first (read only when asked: ``with_notes``)."""
    timings: dict[str, float] = field(default_factory=dict)


def _unpack(texts: list[str], n: int, name: str) -> np.ndarray:
    """One packed column (a text per group) as an int64 array of ``n`` trials."""
    values = np.fromstring(",".join(texts), dtype=np.int64, sep=",")
    if values.size != n:
        raise RuntimeError(f"the store returned an unreadable '{name}' column; report it as a bug")
    return values


def load_run_table(
    store: Any,
    run_id: str,
    fields: Iterable[str] = (),
    *,
    with_variants: bool | None = None,
    with_notes: bool = False,
) -> RunTable:
    """Read one run's trials (and its attempt counts) into a ``RunTable``.

    ``fields``: what to read beyond ``ALWAYS`` (names of ``OPTIONAL``). ``with_variants``:
    True/False if the caller knows whether the run scheduled variant trials; None asks the
    store. ``with_notes``: also read the texts behind unresolved trials and agent failures.
    """
    wanted = set(fields)
    unknown = sorted(wanted - set(OPTIONAL))
    if unknown:
        raise ValueError(f"not fields the run table can load: {', '.join(unknown)}")
    packed = ["small", "trial_index"] + [c for k in OPTIONAL if k in wanted for c in OPTIONAL[k]]
    rows = store.run_rows(run_id, packed, with_variants=with_variants, with_notes=with_notes)
    timings = dict(rows.timings)
    t1 = time.perf_counter()
    groups = [(arm, r) for arm in sorted(rows.groups) for r in rows.groups[arm]]
    counts = np.fromiter((r[_G["n"]] for _, r in groups), dtype=np.int64, count=len(groups))
    n = int(counts.sum())
    first = len(GROUP_FIELDS)
    raw = {
        c.name: _unpack([r[first + i] for _, r in groups], n, c.name)
        for i, c in enumerate(rows.packed)
    }
    scale = {c.name: c.scale for c in rows.packed}
    of_trial = np.repeat(np.arange(len(groups)), counts)
    cols: dict[str, np.ndarray | Labels] = {}

    def labels(values: list[Any]) -> Labels:
        per_group = Labels.of(values)
        return Labels(per_group.codes[of_trial], per_group.names)

    cols["arm"] = labels([arm for arm, _ in groups])
    for name, key in (
        ("task", "task_id"),
        ("variant", "variant"),
        ("cluster", "cluster"),
        ("task_class", "task_class"),
        ("stratum", "stratum"),
    ):
        cols[name] = labels([r[_G[key]] for _, r in groups])
    for name in ("image", "pair_image", "graders"):
        cols[name] = labels([_as_text(r[_G[f"{name}_min"]]) for _, r in groups])
    cols["weight"] = np.array([r[_G["weight"]] for _, r in groups], dtype=float)[of_trial]
    small = raw.pop("small")
    cols["status"] = (small & 7).astype(np.int8)
    cols["usage_known"] = ((small >> 3) & 1) == 1
    cols["attempts"] = (small >> 4) & 4095
    cols["steps"] = (small >> 16).astype(float)
    for name, values in raw.items():
        s = scale[name]
        if s is None:
            cols[name] = values
        else:
            v = values / s
            cols[name] = (
                np.where(v < 0, np.nan, v) if name in ("confidence", "cost", "score") else v
            )
    trials = Trials(cols, n)
    if rows.labels is not None:
        _mixed_labels(trials, rows.labels)
    attempts: dict[str, dict[str, int]] = {}
    attempt_cost: dict[str, dict[str, tuple[float, int]]] = {}
    retried: dict[str, int] = {}
    for arm, outcome, count, usd, known, second in rows.attempts:
        attempts.setdefault(arm, {})[outcome] = count
        attempt_cost.setdefault(arm, {})[outcome] = (usd, known)
        retried[arm] = retried.get(arm, 0) + second
    timings["arrays_s"] = time.perf_counter() - t1
    return RunTable(run_id, trials, attempts, attempt_cost, retried, rows.notes, timings)


def load_trial_rows(store: Any, run_id: str) -> list[Any]:
    """One run's whole trial rows (``harness.store.Trial``), oldest first: for the analyses
    that read a trial's evidence (step progress, grader verdicts, judge details), which the
    packed ``RunTable`` does not carry. The one other way the analyses read the store."""
    return list(store.trials(run_id))


def _mixed_labels(trials: Trials, rows: list[tuple[Any, ...]]) -> None:
    """Give every trial its own image, pairing image and grader versions (``rows``: one per
    trial of the run) where its group's trials disagree."""
    by_key = {(a, t, v, int(i)): (img, pair, _as_text(g)) for a, t, v, i, img, pair, g in rows}
    keys = zip(
        trials.arm.values().tolist(),
        trials.task.values().tolist(),
        trials.variant.values().tolist(),
        trials.trial_index.tolist(),
        strict=True,
    )
    found = [by_key[k] for k in keys]
    for j, name in enumerate(("image", "pair_image", "graders")):
        trials.columns[name] = Labels.of([f[j] or None for f in found])


def _as_text(value: Any) -> str | None:
    """grader_versions comes back as JSON text (SQLite) or a parsed dict (PostgreSQL)."""
    import json

    if value is None or isinstance(value, str):
        return value or None
    return json.dumps(value, sort_keys=True)
