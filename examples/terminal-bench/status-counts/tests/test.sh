#!/bin/bash
# Terminal-Bench's verifier installs pytest with uvx over the network. Offline, pytest runs
# when the image has it; otherwise each test_ function of test_outputs.py is called in turn.
mkdir -p /logs/verifier
if python3 -c "import pytest" 2>/dev/null; then
    python3 -m pytest -q /tests/test_outputs.py -rA
else
    python3 - <<'PY'
import runpy, sys
tests = {k: v for k, v in runpy.run_path("/tests/test_outputs.py").items() if k.startswith("test_")}
failed = 0
for name, test in tests.items():
    try:
        test()
        print("PASSED", name)
    except Exception as exc:  # an assert, or output that does not parse
        failed += 1
        print("FAILED", name, repr(exc))
sys.exit(1 if failed else 0)
PY
fi
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
