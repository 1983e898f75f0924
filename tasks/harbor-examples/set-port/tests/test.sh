#!/bin/bash
# Reward 1 when config.json is valid JSON with port 8081 and every other key unchanged.
mkdir -p /logs/verifier
python3 - <<'PY'
import json, pathlib
expected = {"name": "shop-api", "port": 8081, "workers": 4, "debug": False,
            "allowed_origins": ["https://shop.example"]}
try:
    ok = json.loads(pathlib.Path("/srv/app/config.json").read_text()) == expected
except (OSError, ValueError):
    ok = False
pathlib.Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
PY
