#!/bin/bash
# Reward 1 when /data/totals.json holds the paid totals per customer (to the cent).
mkdir -p /logs/verifier
python3 - <<'PY'
import json, pathlib
expected = {"acme": 120.15, "initech": 75.25, "globex": 10.0}
try:
    got = json.loads(pathlib.Path("/data/totals.json").read_text())
    ok = set(got) == set(expected) and all(abs(got[k] - v) < 0.005 for k, v in expected.items())
except (OSError, ValueError, TypeError):
    ok = False
pathlib.Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
PY
