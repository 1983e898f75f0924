"""The store's 2PL fits, versioned per suite: saved by ``harness anchors fit``, read by a
subset drawn from one (``subset: {method: anchors}``) and by the report."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from harness.config.subset import FitRecord, Subset
from harness.store import Store, now, resolve_url
from harness.store.tables import AnchorFit


def save_fit(store: Store, suite: str, record: FitRecord) -> str:
    """Store ``record`` as the suite's next version; returns the version ('1', '2', ...)."""
    for _ in range(5):  # another process may take the same version: take the next
        with Session(store.engine) as s:
            last = s.exec(
                select(AnchorFit.version)
                .where(AnchorFit.suite_name == suite)
                .order_by(col(AnchorFit.version).desc())
            ).first()
            version = (last or 0) + 1
            created = now()
            doc = {**record, "version": str(version), "created_at": created.isoformat()}
            s.add(AnchorFit(suite_name=suite, version=version, created_at=created, fit=doc))
            try:
                s.commit()
            except IntegrityError:
                continue
            return str(version)
    raise RuntimeError("could not take a fit version (too many writers at once)")


def get_fit(store: Store, suite: str, version: str = "latest") -> FitRecord:
    """The suite's fit of that version (or the newest). ValueError: none such."""
    with Session(store.engine) as s:
        query = select(AnchorFit).where(AnchorFit.suite_name == suite)
        if version == "latest":
            row = s.exec(query.order_by(col(AnchorFit.version).desc())).first()
        elif version.isdigit():
            row = s.exec(query.where(AnchorFit.version == int(version))).first()
        else:
            raise ValueError(f"fit version '{version}' is not a number (or latest)")
    if row is None:
        which = "no 2PL fit" if version == "latest" else f"no fit version {version}"
        raise ValueError(f"{which} of suite '{suite}' in the store: run harness anchors fit")
    record: FitRecord = row.fit  # type: ignore[assignment]
    return record


def list_fits(store: Store, suite: str) -> list[AnchorFit]:
    with Session(store.engine) as s:
        query = select(AnchorFit).where(AnchorFit.suite_name == suite)
        return list(s.exec(query.order_by(col(AnchorFit.version))))


def choose(spec: Subset, ids: list[str], fit: FitRecord, n: int) -> list[str]:
    """anchors: the n most informative tasks at the abilities seen recently; midrange: n
    tasks whose historical pass rate is within the band, nearest 50% first; both by the
    fit's choosing half, so the scoring half's a and b are not the ones that chose."""
    import numpy as np

    from harness.stats.irt import midrange, most_informative

    by = fit.get("choose") or fit  # the half that chooses (a fit made before the split: itself)
    if spec.method == "anchors":
        a = np.array([by["a"][i] for i in ids])
        b = np.array([by["b"][i] for i in ids])
        picked = most_informative(a, b, by.get("recent_theta") or [0.0], n)
    else:
        rates = np.array([by["pass_rate"][i] for i in ids])
        picked = midrange(rates, n, spec.band)
        if picked.size < n:
            raise ValueError(
                f"only {picked.size} tasks have a historical pass rate within "
                f"{spec.band[0]:g}-{spec.band[1]:g} (n = {n})"
            )
    return [ids[i] for i in picked]


class StoreFits:
    """The fits in the store at ``store_url`` (opened only when a fit is asked for)."""

    def __init__(self, store_url: str | None) -> None:
        self.store_url = store_url

    def read(self, suite: str, version: str, store: str | None) -> FitRecord:
        from harness.store.missing import StoreMissing

        try:
            opened = Store(resolve_url(self.store_url, store), create=False)
        except StoreMissing:
            raise ValueError(
                f"no store yet, so no 2PL fit of suite '{suite}': run harness anchors fit"
            ) from None
        try:
            return get_fit(opened, suite, version)
        finally:
            opened.close()

    def choose(self, spec: Subset, ids: list[str], fit: FitRecord, n: int) -> list[str]:
        return choose(spec, ids, fit, n)
