"""Pairwise judgements beside the runs' trials: written one by one as the judge answers (so
an interrupted command loses nothing it paid for), read back by setup (so a rerun of the
same setup asks nothing twice). A run's own judgements compare two of its arms
(``run_b`` NULL); judgements across runs name both runs and are read by their trials."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine
from sqlmodel import Session, col, or_, select

from harness.store.tables import PairwiseJudgement


def put_judgement(engine: Engine, judgement: PairwiseJudgement) -> None:
    with Session(engine, expire_on_commit=False) as s:
        s.add(judgement)
        s.commit()


def run_judgements(
    engine: Engine, run_id: str, setup: str | None = None
) -> list[PairwiseJudgement]:
    """The run's own pairwise judgements, between two of its arms (of one setup, when
    given), oldest first."""
    with Session(engine) as s:
        q = select(PairwiseJudgement).where(
            PairwiseJudgement.run_id == run_id, col(PairwiseJudgement.run_b).is_(None)
        )
        if setup is not None:
            q = q.where(PairwiseJudgement.setup == setup)
        return list(s.exec(q.order_by(col(PairwiseJudgement.id))))


def has_judgements(engine: Engine, run_id: str) -> bool:
    """Whether the run has any pairwise judgement of its own arms (one indexed row read)."""
    with Session(engine) as s:
        q = (
            select(PairwiseJudgement.id)
            .where(PairwiseJudgement.run_id == run_id, col(PairwiseJudgement.run_b).is_(None))
            .limit(1)
        )
        return s.exec(q).first() is not None


def trial_judgements(engine: Engine, trial_id: int) -> list[PairwiseJudgement]:
    """The pairwise judgements that compared this trial with another, oldest first."""
    with Session(engine) as s:
        q = select(PairwiseJudgement).where(
            or_(
                col(PairwiseJudgement.trial_a) == trial_id,
                col(PairwiseJudgement.trial_b) == trial_id,
            )
        )
        return list(s.exec(q.order_by(col(PairwiseJudgement.id))))


def setup_judgements(engine: Engine, setup: str, run_ids: Sequence[str]) -> list[PairwiseJudgement]:
    """One setup's judgements whose first trial is one of ``run_ids``' (within those runs
    or across them), oldest first: what a rerun over those runs can reuse."""
    with Session(engine) as s:
        q = select(PairwiseJudgement).where(
            PairwiseJudgement.setup == setup, col(PairwiseJudgement.run_id).in_(list(run_ids))
        )
        return list(s.exec(q.order_by(col(PairwiseJudgement.id))))


def mirrored(j: PairwiseJudgement) -> PairwiseJudgement:
    """The judgement with its two sides the other way round (same call, same verdict): how
    a judgement stored for (x, y) is read for the pair (y, x). Not stored."""
    flip = {"A": "B", "B": "A"}
    run_b = j.run_b or j.run_id
    return j.model_copy(
        update={
            "run_id": run_b,
            "run_b": j.run_id if run_b != j.run_id else None,
            "arm_a": j.arm_b,
            "arm_b": j.arm_a,
            "trial_a": j.trial_b,
            "trial_b": j.trial_a,
            "shown_first": flip[j.shown_first],
            "verdict": flip.get(j.verdict, j.verdict),
        }
    )
