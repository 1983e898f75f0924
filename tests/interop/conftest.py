"""One import of tau-bench (both domains' test splits) shared by the tests of this folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.importers.tau_bench import Imported, import_tau_bench
from tests.interop.tau_support import DOMAINS, checkout_or_skip


@pytest.fixture(scope="session")
def tau_import(tmp_path_factory) -> tuple[Path, dict[str, Imported]]:
    """(output dir, domain -> what `harness import tau-bench` wrote)."""
    checkout = checkout_or_skip()
    out = tmp_path_factory.mktemp("tau-import")
    return out, {d: import_tau_bench(checkout, d, "test", out) for d in DOMAINS}
