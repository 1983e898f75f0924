"""Checks of /app/top_customers.csv (pytest-style test functions). The expected rows were
computed from the database as built (environment/make_db.py, a fixed seed), never read
from the agent's copy, which it could have changed."""

import csv
from pathlib import Path

OUT = Path("/app/top_customers.csv")
# Paid totals only: customer 8's refunded 900000 would top the list if it were counted.
EXPECTED = [["Radia", "148393"], ["Ada", "132133"], ["Grace", "131695"]]


def test_header():
    assert OUT.read_text().splitlines()[0].strip() == "name,total"


def test_top_three_in_order():
    rows = list(csv.reader(OUT.read_text().splitlines()[1:]))
    assert rows == EXPECTED
