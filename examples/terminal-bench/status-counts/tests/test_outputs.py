"""Checks of /app/status_counts.json (pytest-style test functions)."""

import json
import re
from collections import Counter
from pathlib import Path

LOG = Path("/tests/access.log")  # the pristine log, shipped with the tests
OUT = Path("/app/status_counts.json")
VALID = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" (\d{3}) (\d+|-)$')


def expected() -> dict[str, int]:
    counts = Counter()
    for text in LOG.read_text().splitlines():
        m = VALID.match(text.strip())
        if m:
            counts[m.group(1)] += 1
    return dict(counts)


def test_output_exists():
    assert OUT.is_file(), f"{OUT} was not written"


def test_keys_are_status_strings():
    data = json.loads(OUT.read_text())
    assert isinstance(data, dict) and all(re.fullmatch(r"\d{3}", k) for k in data)


def test_counts_match_the_log():
    assert json.loads(OUT.read_text()) == expected()
