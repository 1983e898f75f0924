"""Hidden tests for shell/fix-mean, one "<nonce> PASS name" / "<nonce> FAIL name" line each.

The pattern every shipped hidden test follows: this process (the grader) never loads the
code under test. Each call runs in a child process as the agent's user through
$HARNESS_AS_AGENT, and only the result it prints comes back, as data; the nonce stays in
this process, which the child can neither read nor write.
"""

import json
import os
import subprocess

N = os.environ["HARNESS_RESULT_NONCE"]
CHILD = """
import json, sys
sys.path.insert(0, "app")
try:
    import calc
    result = {"value": getattr(calc, sys.argv[1])(*json.loads(sys.argv[2]))}
except Exception as exc:
    result = {"raised": type(exc).__name__}
print("RESULT " + json.dumps(result))
"""


def call(name, *args):
    """calc.NAME(*args) as the agent's user: {"value": ...} or {"raised": "ErrorName"}."""
    argv = [os.environ["HARNESS_AS_AGENT"], "/usr/bin/python3", "-I", "-c", CHILD, name]
    try:
        done = subprocess.run([*argv, json.dumps(args)], capture_output=True, text=True, timeout=30)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        return json.loads(lines[-1][len("RESULT ") :]) if lines else {"raised": "no result"}
    except Exception as exc:  # a hang, unreadable output: the call failed
        return {"raised": type(exc).__name__}


TESTS = {
    "test_total": lambda: call("total", [1, 2, 3]) == {"value": 6},
    "test_median": lambda: (
        call("median", [3, 1, 2]) == {"value": 2} and call("median", [4, 1, 2, 3]) == {"value": 2.5}
    ),
    "test_mean": lambda: call("mean", [1, 2, 3, 4]) == {"value": 2.5},
    "test_mean_single": lambda: call("mean", [7]) == {"value": 7},
    "test_mean_empty_raises": lambda: call("mean", []) == {"raised": "ValueError"},
}
failed = 0
for name, test in TESTS.items():
    ok = test()
    failed += not ok
    print(f"{N} {'PASS' if ok else 'FAIL'} {name}", flush=True)
raise SystemExit(1 if failed else 0)
