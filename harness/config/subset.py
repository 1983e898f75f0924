"""A declared subset of the suite's tasks (``subset:``, ``harness run --subset``).

A subset run estimates the full suite's score from part of it, so what was drawn, how and
from what is part of the run: the draw (``SubsetDraw``) is stored with the run's config and
counted in its hash, and every arm runs the same tasks (comparisons stay paired). Methods:
``random`` (seeded; tasks, or whole clusters with ``unit: cluster``), ``stratified`` (by
class or cluster, proportional allocation, weighted back to the suite's mix by the report),
``anchors`` (the most informative tasks under the suite's stored 2PL fit, ``harness anchors
fit``) and ``midrange`` (tasks whose historical pass rate lies in ``band``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict

import numpy as np
from pydantic import Field, model_validator

from harness.config.base import MAX_SEED, Strict
from harness.errors import ConfigError

METHODS = ("random", "stratified", "anchors", "midrange")


class Subset(Strict):
    """Which of the suite's tasks a run draws; ``--subset METHOD:N`` (or ``METHOD:P%``)."""

    method: Literal["random", "stratified", "anchors", "midrange"]
    """random, stratified, anchors (most informative under the suite's 2PL fit) or midrange
    (historical pass rate within band)"""
    n: int | None = Field(None, strict=True, ge=1, le=10**6)
    """tasks to draw (clusters, for random with unit: cluster)"""
    fraction: float | None = Field(None, gt=0, le=1, allow_inf_nan=False)
    """share of the suite's tasks to draw, instead of n (rounded up)"""
    seed: int | None = Field(None, strict=True, ge=0, le=MAX_SEED)
    """seed of the draw; default: the suite's seed"""
    by: Literal["class", "cluster"] = "class"
    """strata of a stratified subset"""
    unit: Literal["task", "cluster"] = "task"
    """what a random subset draws: tasks, or whole clusters (the report's independent unit)"""
    band: tuple[float, float] = (0.2, 0.8)
    """midrange: the historical pass rates kept (inclusive)"""
    fit: str = "latest"
    """anchors, midrange: the fit version to use (harness anchors fit), or latest"""

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: object) -> object:
        """``random:50``, ``stratified:20%`` (the command line's form)."""
        if not isinstance(data, str):
            return data
        method, _, size = data.partition(":")
        if not size:
            raise ValueError(f"write METHOD:N or METHOD:P% (methods: {', '.join(METHODS)})")
        if size.endswith("%"):
            try:
                return {"method": method, "fraction": float(size[:-1]) / 100}
            except ValueError:
                raise ValueError(f"'{size}' is not a percentage") from None
        if not size.isdigit():
            raise ValueError(f"'{size}' is not a number of tasks")
        return {"method": method, "n": int(size)}

    @model_validator(mode="after")
    def _one_size(self) -> Subset:
        if (self.n is None) == (self.fraction is None):
            raise ValueError("give exactly one of n and fraction")
        lo, hi = self.band
        if not 0 <= lo <= hi <= 1:
            raise ValueError("band must be two pass rates 0 <= low <= high <= 1")
        return self


class PopulationTask(TypedDict):
    """One task of the full suite, as the subset's estimates need it."""

    id: str
    cls: str
    cluster: str


class FitRecord(TypedDict, total=False):
    """A stored 2PL fit of the suite's tasks (``harness anchors fit``), as a draw reads it."""

    version: str
    created_at: str
    a: dict[str, float]
    b: dict[str, float]
    pass_rate: dict[str, float]
    task_hash: dict[str, str]
    """Task id → hash of the task's config when fitted: a changed task makes the fit stale."""
    recent_theta: list[float]
    """Abilities of the systems seen most recently: where anchors should be informative."""
    choose: FitChoice
    """The fit of the history's other half, which picks the anchors (a fit without it, made
    before the split, picks by its own a and b)."""
    split: FitSplit
    """Which runs fitted which half (a, b above: the scoring half)."""


class FitChoice(TypedDict, total=False):
    """What picks anchors: a 2PL fit of one half of the history, independent of the half
    whose a and b score the run (choosing and scoring by one fit over-states the chosen
    tasks' discrimination, and the interval undercovers)."""

    a: dict[str, float]
    b: dict[str, float]
    pass_rate: dict[str, float]
    recent_theta: list[float]


class FitSplit(TypedDict):
    """The seeded split of the history's systems into the choosing and the scoring half."""

    seed: int
    unit: str
    """'run' (every arm of a run in one half) or 'system' (a store with one run: its arms)."""
    choose: list[list[str]]
    """(run id, arm) of each system the choosing fit used."""
    score: list[list[str]]


class SubsetDraw(TypedDict, total=False):
    """What a run drew, stored as ``config["subset"]`` and hashed with it."""

    method: str
    seed: int
    unit: str
    by: str
    tasks: list[str]
    """The drawn tasks' ids (every arm runs these)."""
    population: list[PopulationTask]
    """Every task of the full suite (its N)."""
    fit: FitRecord
    """anchors, midrange: the fit used (its a and b cover every task of the population)."""


Chooser = Callable[[Subset, list[str], FitRecord, int], list[str]]
"""(spec, the population's ids, the fit, n) → the n ids a fit-based method picks."""


class FitSource(Protocol):
    """The store's fits, given to the loader from above (``harness.anchors.fits``): config
    reads files, the statistics that pick anchors live above it."""

    def read(self, suite: str, version: str, store: str | None) -> FitRecord:
        """The suite's fit ('latest' or a version); ValueError with the reason if none."""
        ...

    def choose(self, spec: Subset, ids: list[str], fit: FitRecord, n: int) -> list[str]:
        """The n ids of ``ids`` a fit-based method picks."""
        ...


def task_hash(task_doc: object) -> str:
    """A short stable hash of one task's config (what a fit remembers of each task)."""
    blob = json.dumps(task_doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def size_of(spec: Subset, total: int) -> int:
    if spec.n is not None:
        return spec.n
    return max(1, int(np.ceil((spec.fraction or 0.0) * total - 1e-9)))


def _rng(seed: int, method: str) -> np.random.Generator:
    salt = int.from_bytes(hashlib.sha256(method.encode()).digest()[:4], "big")
    return np.random.default_rng([seed, salt])


def allocate(sizes: Sequence[int], n: int) -> list[int]:
    """Proportional allocation of n draws to strata of these sizes, by largest remainder,
    at least one per stratum (two where the stratum has them and n allows: a stratum's
    spread needs two)."""
    sizes_a = np.asarray(sizes, dtype=float)
    if n < sizes_a.size:
        raise ValueError(f"a stratified subset needs n >= the {sizes_a.size} strata")
    floor = np.minimum(sizes_a, 2 if n >= 2 * sizes_a.size else 1)
    share = sizes_a / sizes_a.sum() * n
    alloc = np.maximum(np.floor(share), floor)
    while alloc.sum() > n:
        i = int(np.argmax(np.where(alloc > floor, alloc - share, -np.inf)))
        alloc[i] -= 1
    while alloc.sum() < n:
        i = int(np.argmax(np.where(alloc < sizes_a, share - alloc, -np.inf)))
        alloc[i] += 1
    return [int(x) for x in alloc]


def draw(
    spec: Subset,
    population: list[PopulationTask],
    seed: int,
    fit: FitRecord | None = None,
    choose: Chooser | None = None,
) -> SubsetDraw:
    """The draw: which of ``population`` a run of ``spec`` runs (``choose`` picks for the
    fit-based methods). Raises ValueError with a user's reason when the spec cannot be met."""
    pop = sorted(population, key=lambda t: t["id"])  # the draw ignores file order
    total = len(pop)
    n = size_of(spec, total)
    rng = _rng(seed, spec.method)
    record = SubsetDraw(method=spec.method, seed=seed, unit=spec.unit, by=spec.by)
    if spec.method == "random" and spec.unit == "cluster":
        clusters = sorted({t["cluster"] for t in pop})
        if n > len(clusters):
            raise ValueError(f"n = {n} clusters but the suite has {len(clusters)}")
        picked = set(rng.choice(clusters, n, replace=False).tolist()) if n else set()
        chosen = [t["id"] for t in pop if t["cluster"] in picked]
    else:
        if n > total:
            raise ValueError(f"n = {n} tasks but the suite has {total}")
        chosen = _choose(spec, pop, n, rng, fit, choose)
    if fit is not None:
        record["fit"] = fit
    record["tasks"] = sorted(chosen)
    record["population"] = pop
    return record


def _choose(
    spec: Subset,
    pop: list[PopulationTask],
    n: int,
    rng: np.random.Generator,
    fit: FitRecord | None,
    choose: Chooser | None,
) -> list[str]:
    ids = [t["id"] for t in pop]
    if spec.method == "random":
        return [ids[i] for i in rng.choice(len(ids), n, replace=False)]
    if spec.method == "stratified":
        key = "cls" if spec.by == "class" else "cluster"
        names = sorted({t[key] for t in pop})  # type: ignore[literal-required]
        members = [[t["id"] for t in pop if t[key] == s] for s in names]  # type: ignore[literal-required]
        out: list[str] = []
        for group, k in zip(members, allocate([len(g) for g in members], n), strict=True):
            out += [group[i] for i in rng.choice(len(group), k, replace=False)]
        return out
    if fit is None or choose is None:
        raise ValueError(f"method {spec.method} needs a fit (harness anchors fit SUITE)")
    return choose(spec, ids, fit, n)


def stale_reason(fit: FitRecord, current: dict[str, str]) -> str | None:
    """Why ``fit`` no longer describes the suite's tasks (``current``: id → task hash)."""
    known = fit.get("task_hash") or {}
    new = sorted(set(current) - set(known))
    if new:
        more = f" and {len(new) - 1} more" if len(new) > 1 else ""
        return f"task '{new[0]}'{more} is newer than fit {fit.get('version')}"
    changed = sorted(t for t in current if known[t] != current[t])
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return f"task '{changed[0]}'{more} changed since fit {fit.get('version')}"
    return None


class TaskLike(Protocol):
    """What a draw reads of a task (``harness.config.models.Task``)."""

    id: str
    class_: str

    @property
    def cluster_id(self) -> str: ...

    def model_dump(self, *, mode: str, by_alias: bool) -> dict[str, Any]: ...


def draw_for(
    spec: Subset,
    tasks: Sequence[TaskLike],
    seed: int,
    suite: str,
    fits: FitSource | None,
    store: str | None = None,
) -> SubsetDraw:
    """The draw of ``spec`` from the suite's tasks; a fit-based method reads the suite's
    stored fit through ``fits`` and refuses one older than the tasks. ValueError: why not."""
    population = [PopulationTask(id=t.id, cls=t.class_, cluster=t.cluster_id) for t in tasks]
    fit = None
    if spec.method in ("anchors", "midrange"):
        if fits is None:
            raise ValueError(f"method {spec.method} needs the store's fits (none given)")
        fit = fits.read(suite, spec.fit, store)
        current = {t.id: task_hash(t.model_dump(mode="json", by_alias=True)) for t in tasks}
        why = stale_reason(fit, current)
        if why:
            raise ValueError(f"{why}: refit with harness anchors fit")
    seed = spec.seed if spec.seed is not None else seed
    return draw(spec, population, seed, fit, fits.choose if fits else None)


class SuiteLike(Protocol):
    name: str
    seed: int
    store: str | None
    subset: Subset | None


def subset_of(
    suite: SuiteLike,
    tasks: Sequence[TaskLike],
    where: tuple[Path, int | None],
    fits: FitSource | None,
    limit: int | None,
) -> SubsetDraw | None:
    """The suite's draw (None without ``subset:``); a problem is a ConfigError naming the
    suite file's ``subset`` and its line (``where``)."""
    if suite.subset is None:
        return None
    if limit:
        raise ConfigError(str(where[0]), "--limit", "a subset run takes no --limit (give its n)")
    try:
        return draw_for(suite.subset, tasks, suite.seed, suite.name, fits, suite.store)
    except ValueError as exc:
        raise ConfigError(str(where[0]), "subset", str(exc), where[1]) from None
