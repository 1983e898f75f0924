"""Which arm is the baseline, which the candidate, which the A/A copy: decided here only.

Every view (the run's ``aa: true`` expansion, ``harness report``, ``compare``, ``gate``,
``history``, ``plan`` and the HTML report) asks this one function, so they name the same
arms. The precedence is the gate's pair, then the report's, then the arms' order; the A/A
rule is one rule. Plain data in, plain data out: the config models and the analysis of
stored runs (whose config is JSON) both call it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

AA_SUFFIXES = ("-aa", "_aa", ".aa")
"""An arm named ``<baseline>-aa`` (what ``aa: true`` adds), ``_aa`` or ``.aa`` is the A/A copy."""


class Roles(NamedTuple):
    """The primary comparison's arms; ``source`` says which declaration named them."""

    baseline: str | None
    candidate: str | None
    aa: str | None
    source: str
    """'gate', 'report' or 'order' (the first two arms that are not A/A copies)."""


def is_copy_name(arm: str, of: str) -> bool:
    """Is ``arm`` named as the A/A copy of ``of``?"""
    return arm.lower() in {of.lower() + s for s in AA_SUFFIXES}


def decide_roles(
    arms: Sequence[str],
    *,
    gate: tuple[str, str] | None = None,
    report: tuple[str, str] | None = None,
    same_setup: Callable[[str, str], bool] | None = None,
) -> Roles:
    """The roles of ``arms`` (in the run's order).

    Baseline and candidate: ``gate`` (the gate's declared pair), else ``report`` (the
    report's), else the first two arms not named as another arm's A/A copy. The A/A arm:
    another arm named as the baseline's copy (``AA_SUFFIXES``), else another arm that
    ``same_setup`` says is configured exactly like the baseline (same agent, params and
    model): its difference from the baseline is noise, the floor a real delta must clear.
    """
    pair, source = (gate, "gate") if gate else (report, "report") if report else (None, "order")
    if pair is None:
        plain = [a for a in arms if not any(is_copy_name(a, b) for b in arms if b != a)]
        pair_ = (plain[0] if plain else None, plain[1] if len(plain) > 1 else None)
    else:
        pair_ = pair
    baseline, candidate = pair_
    others = [a for a in arms if a not in (baseline, candidate)]
    aa = None
    if baseline is not None:
        aa = next((a for a in others if is_copy_name(a, baseline)), None)
        if aa is None and same_setup is not None and baseline in arms:
            aa = next((a for a in others if same_setup(a, baseline)), None)
    return Roles(baseline, candidate, aa, source)
