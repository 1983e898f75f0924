"""One run's trials as a typed, columnar table: the one shape every analysis reads.

A ``Trials`` holds one numpy array per field, one entry per trial; text fields (arm, task,
variant, cluster, class, stratum, images, grader versions) are ``Labels``: integer codes
into their sorted distinct values, so grouping a million trials by task never hashes a
million strings. ``harness.analysis.load.load_run_table`` fills one from the store;
``Trials.from_columns`` builds one from columns in memory (simulations, tests, your own
analyses). Every view (report, compare, gate, history, plan, the HTML page and the viewer)
selects from it (``of_arm``, ``originals``, ``first``, ``of_class``) and reads its fields.

A field the loader was not asked for is absent, and reading it is an error rather than a
silent default (``Trials.has`` asks first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, Generic, TypeVar, overload

import numpy as np

from harness import errors
from harness.store.queries import STATUS_CODES

PASSED_CODE = STATUS_CODES[errors.PASSED]
FAILED_CODE = STATUS_CODES[errors.FAILED]
STATUS_NAMES = np.array(errors.STATUSES, dtype=object)
"""Status code → status name."""


def _order(value: object) -> tuple[bool, str]:
    """Sort key of a label: None first, then the texts in order."""
    return (value is not None, "" if value is None else str(value))


class Labels:
    """A text column as codes: ``names`` holds the sorted distinct values (None first when
    present), ``codes`` one index into it per trial."""

    __slots__ = ("codes", "names")

    def __init__(self, codes: np.ndarray, names: np.ndarray) -> None:
        self.codes = codes
        self.names = names

    @classmethod
    def of(cls, values: Sequence[Any] | np.ndarray) -> Labels:
        """Labels of a sequence of texts (or None), by hashing rather than sorting them all."""
        items = values.tolist() if isinstance(values, np.ndarray) else list(values)
        names = sorted(set(items), key=_order)
        index = {name: i for i, name in enumerate(names)}
        codes = np.fromiter(map(index.__getitem__, items), dtype=np.intp, count=len(items))
        return cls(codes, np.array(names, dtype=object))

    def values(self) -> np.ndarray:
        """The label of every trial (an object array)."""
        return self.names[self.codes]

    def take(self, index: np.ndarray) -> Labels:
        return Labels(self.codes[index], self.names)

    def code(self, name: object) -> int | None:
        """The code of ``name``, or None when no trial carries it."""
        found = [i for i, n in enumerate(self.names.tolist()) if n == name]
        return found[0] if found else None

    def present(self) -> list[Any]:
        """The distinct labels the trials carry, in order."""
        return self.names[np.unique(self.codes)].tolist()


T = TypeVar("T")


class _Field(Generic[T]):
    """A column of ``Trials``, read from its ``columns``; absent if the loader skipped it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _Field[T]: ...
    @overload
    def __get__(self, obj: Trials, owner: type) -> T: ...
    def __get__(self, obj: Trials | None, owner: type) -> _Field[T] | T:
        if obj is None:
            return self
        try:
            return obj.columns[self.name]  # type: ignore[return-value]
        except KeyError:
            raise LookupError(
                f"the run table was loaded without '{self.name}' (a bug of ours: report it)"
            ) from None


LABEL_FIELDS = (
    "arm",
    "task",
    "variant",
    "cluster",
    "task_class",
    "stratum",
    "image",
    "pair_image",
    "graders",
)
NUMBER_FIELDS = (
    "weight",
    "status",
    "usage_known",
    "attempts",
    "steps",
    "trial_index",
    "confidence",
    "latency",
    "cost",
    "harm",
    "score",
    "tokens_in",
    "tokens_cached",
    "tokens_out",
    "seed",
    "id",
)
STORE_NAMES = {
    "task_id": "task",
    "latency_s": "latency",
    "cost_usd": "cost",
    "harm_severity": "harm",
    "image_id": "image",
    "task_image_id": "pair_image",
    "grader_versions": "graders",
}
"""Trials-table column → field, where the names differ (``from_columns`` takes either)."""


class Trials:
    """Trials as columns: one entry per trial, in no promised order."""

    arm = _Field[Labels]()
    task = _Field[Labels]()
    variant = _Field[Labels]()
    """'' for the task as written, else the variant's id."""
    cluster = _Field[Labels]()
    task_class = _Field[Labels]()
    stratum = _Field[Labels]()
    """None where the task declares none."""
    image = _Field[Labels]()
    """The image the trial's sandbox ran (None when unknown)."""
    pair_image = _Field[Labels]()
    """The task's pinned image under any agent CLI layer: what pairs two arms' trials."""
    graders = _Field[Labels]()
    """The grader versions behind the verdict, as JSON text (``grader_versions``)."""
    weight = _Field[np.ndarray]()
    status = _Field[np.ndarray]()
    """Status code per trial (``STATUS_CODES``; unknown statuses read as harness_error)."""
    usage_known = _Field[np.ndarray]()
    """True when the trial's model calls reported their usage (tokens known)."""
    attempts = _Field[np.ndarray]()
    steps = _Field[np.ndarray]()
    trial_index = _Field[np.ndarray]()
    confidence = _Field[np.ndarray]()
    """Stated confidence; NaN when the agent gave none."""
    latency = _Field[np.ndarray]()
    cost = _Field[np.ndarray]()
    """US dollars; NaN when the price or the usage was unknown."""
    harm = _Field[np.ndarray]()
    score = _Field[np.ndarray]()
    """The graders' partial credit in [0, 1] (mean over graders); NaN when none was stored."""
    tokens_in = _Field[np.ndarray]()
    """Tokens of trials with known usage; 0 where unknown (``usage_known``)."""
    tokens_cached = _Field[np.ndarray]()
    tokens_out = _Field[np.ndarray]()
    seed = _Field[np.ndarray]()
    id = _Field[np.ndarray]()
    """The trial's id in the store."""

    def __init__(self, columns: Mapping[str, np.ndarray | Labels], n: int) -> None:
        self.columns = dict(columns)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def has(self, name: str) -> bool:
        """Was the field loaded (or given)?"""
        return name in self.columns

    # ------------------------------------------------------------------ in memory
    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> Trials:
        """Trials from equal-length columns named as fields or as the trials table's columns
        (``task_id``, ``cost_usd``, ``grader_versions``...). Statuses are names; grader
        versions dicts or JSON text. ``task_id`` and ``status`` are required; a missing
        ``variant`` is '' (the task as written), ``weight`` 1 and ``attempts`` 1; the other
        fields stay absent. An unknown name is an error, never a silently dropped column."""
        given = {STORE_NAMES.get(k, k): v for k, v in columns.items()}
        unknown = sorted(set(given) - set(LABEL_FIELDS) - set(NUMBER_FIELDS))
        if unknown:
            raise ValueError(f"not fields of a trial table: {', '.join(unknown)}")
        n = len(given["task"])
        given.setdefault("variant", [""] * n)
        given.setdefault("arm", [""] * n)
        out: dict[str, np.ndarray | Labels] = {}
        for name, values in given.items():
            if len(values) != n:
                raise ValueError(f"column '{name}' has {len(values)} values, 'task_id' has {n}")
            if name == "graders":
                values = [_graders_text(v) for v in values]
            if name in LABEL_FIELDS:
                out[name] = Labels.of(values)
            elif name == "status":
                codes = STATUS_CODES.get
                harness_error = STATUS_CODES[errors.HARNESS_ERROR]
                out[name] = np.fromiter(
                    (codes(s, harness_error) for s in values), dtype=np.int8, count=n
                )
            else:
                out[name] = _numbers(name, values)
        out.setdefault("weight", np.ones(n))
        out.setdefault("attempts", np.ones(n, dtype=np.int64))
        return cls(out, n)

    # ------------------------------------------------------------------ selections
    def where(self, index: np.ndarray) -> Trials:
        """The trials a boolean mask (or an index array) selects."""
        cols = {
            k: v.take(index) if isinstance(v, Labels) else v[index] for k, v in self.columns.items()
        }
        count = int(np.count_nonzero(index)) if index.dtype == bool else int(index.size)
        return Trials(cols, count)

    def _equal(self, field: str, name: object) -> Trials:
        labels: Labels = self.columns[field]  # type: ignore[assignment]
        code = labels.code(name)
        return self.where(labels.codes == (-1 if code is None else code))

    def of_arm(self, arm: str) -> Trials:
        return self._equal("arm", arm)

    def of_class(self, task_class: str) -> Trials:
        return self._equal("task_class", task_class)

    def originals(self) -> Trials:
        """The trials of the tasks as written (no variants)."""
        return self.where(self.is_original)

    def variants(self) -> Trials:
        """The variant trials only."""
        return self.where(~self.is_original)

    def first(self, k: int) -> Trials:
        """Trials with trial index below ``k`` (under adaptive repeats: phase one)."""
        return self.where(self.trial_index < k)

    # ------------------------------------------------------------------ derived
    @property
    def passed(self) -> np.ndarray:
        return self.status == PASSED_CODE

    @property
    def resolved(self) -> np.ndarray:
        """Trials with a verdict (passed or failed)."""
        return (self.status == PASSED_CODE) | (self.status == FAILED_CODE)

    @property
    def is_original(self) -> np.ndarray:
        """Per trial: of the task as written (not a variant)."""
        code = self.variant.code("")
        return self.variant.codes == (-1 if code is None else code)

    @cached_property
    def _tasks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        codes = self.task.codes
        uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return self.task.names[uniq], first, inverse.reshape(-1)

    @property
    def task_ids(self) -> np.ndarray:
        """The tasks present, sorted by id (one entry per task)."""
        return self._tasks[0]

    @property
    def task_index(self) -> np.ndarray:
        """Per trial: the position of its task in ``task_ids``."""
        return self._tasks[2]

    def per_task(self, field: str) -> np.ndarray:
        """Per task (``task_ids`` order): the field's value on the task's first trial."""
        column = self.columns[field]
        first = self._tasks[1]
        return column.names[column.codes[first]] if isinstance(column, Labels) else column[first]

    def texts(self, field: str) -> list[Any]:
        """The distinct non-empty labels of ``field`` the trials carry, in order."""
        labels: Labels = self.columns[field]  # type: ignore[assignment]
        return [x for x in labels.present() if x]

    def grader_versions(self) -> dict[str, set[str]]:
        """Grader → the versions of it the trials' verdicts came from."""
        out: dict[str, set[str]] = {}
        for text in self.texts("graders"):
            for grader, version in _parse(text).items():
                out.setdefault(str(grader), set()).add(str(version))
        return out


def _numbers(name: str, values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """A numeric column: ints stay int64 (seeds are 63-bit), None reads as NaN."""
    if name in ("usage_known",):
        return np.asarray(values, dtype=bool)
    if name in ("trial_index", "seed", "id", "attempts"):
        return np.asarray(values, dtype=np.int64)
    arr = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    if name == "weight":
        arr = np.where(np.isnan(arr), 1.0, arr)
    return arr


def _graders_text(value: object) -> str | None:
    """Grader versions as the store keeps them: JSON text (dicts serialised sorted)."""
    if value is None or isinstance(value, str):
        return value or None
    return json.dumps(value, sort_keys=True)


def _parse(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
