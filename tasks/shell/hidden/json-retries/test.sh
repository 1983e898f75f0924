#!/bin/bash
# Hidden tests for shell/json-retries: one "<nonce> PASS name" / "<nonce> FAIL name" line per test.
# The agent's file is read as data by an isolated interpreter (no code under test runs).
/usr/bin/python3 -I - <<'PY'
import os
N = os.environ["HARNESS_RESULT_NONCE"]
import json
try:
    data = json.load(open("app/settings.json"))
    print(f"{N} PASS valid_json")
except Exception as exc:
    print(f"{N} FAIL valid_json ({exc})")
    raise SystemExit(1)
print(N, ("PASS" if data.get("retries") == 5 and type(data.get("retries")) is int else "FAIL") + " retries_is_5")
ok = data.get("name") == "demo" and data.get("features") == ["search", "export"] and set(data) == {"name", "retries", "features"}
print(N, ("PASS" if ok else "FAIL") + " other_keys_kept")
PY
