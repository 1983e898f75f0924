"""The record of which rates a gate read (``harness.release.gate_quantity`` decides it): its
own module so the record types (``harness.release.records``) need nothing of the analysis
core that the reading itself uses."""

from __future__ import annotations

from typing import TypedDict

from harness.stats.judge_correction import CorrectedRecord


class GateQuantity(TypedDict):
    """Which rates the gate's rule read, in one line for every view."""

    used: str
    """'raw' (as graded) or 'corrected' (for the judge's error, with human labels)."""
    text: str
    raw_verdict: str | None
    """With 'corrected': the verdict the raw rates would have given."""
    corrected: CorrectedRecord | None
    """With 'corrected': the corrected rate (threshold) or paired delta the rule read."""


RAW: GateQuantity = {
    "used": "raw",
    "text": "quantity: raw rates, as graded",
    "raw_verdict": None,
    "corrected": None,
}

__all__ = ["RAW", "GateQuantity"]
