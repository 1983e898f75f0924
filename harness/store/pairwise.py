"""Pairwise judgements beside the run's trials: written one by one as the judge answers (so
an interrupted command loses nothing it paid for), read back by setup (so a rerun of the
same setup asks nothing twice)."""

from __future__ import annotations

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
    """The run's pairwise judgements (of one setup, when given), oldest first."""
    with Session(engine) as s:
        q = select(PairwiseJudgement).where(PairwiseJudgement.run_id == run_id)
        if setup is not None:
            q = q.where(PairwiseJudgement.setup == setup)
        return list(s.exec(q.order_by(col(PairwiseJudgement.id))))


def has_judgements(engine: Engine, run_id: str) -> bool:
    """Whether the run has any pairwise judgement (one indexed row read)."""
    with Session(engine) as s:
        q = select(PairwiseJudgement.id).where(PairwiseJudgement.run_id == run_id).limit(1)
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
