#!/bin/bash
# Reward 1 when the inventory service holds exactly one 3-unit reservation for each item
# whose stock is below 5, and no other reservation.
mkdir -p /logs/verifier
python3 - <<'PY'
import json, pathlib, urllib.request
try:
    got = json.load(urllib.request.urlopen("http://inventory:8000/reservations", timeout=10))
    ok = sorted((r["sku"], r["units"]) for r in got) == [("A-100", 3), ("C-300", 3), ("D-400", 3)]
except (OSError, ValueError, KeyError, TypeError):
    ok = False
pathlib.Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
PY
