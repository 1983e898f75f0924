#!/bin/bash
# Hidden test: lines tagged with the grader's nonce, read before the code under test loads.
python3 -B - <<'PY'
import os
import sys

N = os.environ.pop("HARNESS_RESULT_NONCE", "")
sys.path.insert(0, "app")
try:
    import calc

    ok = calc.add(2, 3) == 5
except Exception:
    ok = False
print(f"{N} {'PASS' if ok else 'FAIL'} test_add")
PY
