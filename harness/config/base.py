"""What every config model shares: the stated range of each kind of number, and the strict
base model (unknown keys are errors that name the field)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# ------------------------------------------------------------------------------ ranges
# Every number a config file may hold has a stated maximum (docs/suite.md, "Limits"): a typo such as
# `trials: 1e11` is a one-line error, not a run that never ends. Integers are strict: `true`
# is not 1 and "3" is not 3.
MAX_SEED = 2**63 - 1
MAX_TRIALS = 10_000  # trials per task per arm (also repeats.max_k)
MAX_CONCURRENCY = 1_024
MAX_SECONDS = 7 * 24 * 3600.0  # any timeout: one week
MAX_WEIGHT = 1e6
MAX_STEPS = 1_000_000
MAX_TOKENS = 10**12
MAX_ATTEMPTS = 100

Seed = Annotated[int, Field(strict=True, ge=0, le=MAX_SEED, description="0 .. 2^63-1")]
Count = Annotated[int, Field(strict=True, ge=1, le=MAX_TRIALS)]
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
Money = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]


def parse_bytes(text: str) -> int:
    """``512m`` / ``1g`` / ``1gb`` / ``1048576`` -> bytes (Docker's memory syntax; the
    sizes of ``limits``)."""
    units = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    t = text.strip().lower()
    if len(t) > 1 and t.endswith("b") and t[-2] in "kmgt":
        t = t[:-1]
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


class FieldError(ValueError):
    """A model validator's error about one field below the model (``("report", "primary",
    "baseline")``): the loader reports that field and its line, not the model's first."""

    def __init__(self, loc: tuple[str | int, ...], message: str):
        self.loc = loc
        super().__init__(message)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)
