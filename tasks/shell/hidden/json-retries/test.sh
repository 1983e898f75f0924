#!/bin/bash
# Hidden tests for shell/json-retries: one "PASS name" / "FAIL name" line per test.
python3 -B - <<'PY'
import json
try:
    data = json.load(open("app/settings.json"))
    print("PASS valid_json")
except Exception as exc:
    print(f"FAIL valid_json ({exc})")
    raise SystemExit(1)
print(("PASS" if data.get("retries") == 5 and type(data.get("retries")) is int else "FAIL") + " retries_is_5")
ok = data.get("name") == "demo" and data.get("features") == ["search", "export"] and set(data) == {"name", "retries", "features"}
print(("PASS" if ok else "FAIL") + " other_keys_kept")
PY
