"""Hidden tests for shell/add-word-count, one "<nonce> PASS name" / "<nonce> FAIL name" line
each. The code under test runs only in child processes as the agent's user
($HARNESS_AS_AGENT); its printed result comes back as data (see shell/fix-mean)."""

import json
import os
import subprocess

N = os.environ["HARNESS_RESULT_NONCE"]
CHILD = """
import json, sys
sys.path.insert(0, "app")
try:
    import textutil
    result = {"value": getattr(textutil, sys.argv[1])(*json.loads(sys.argv[2]))}
except Exception as exc:
    result = {"raised": type(exc).__name__}
print("RESULT " + json.dumps(result))
"""


def call(name, *args):
    argv = [os.environ["HARNESS_AS_AGENT"], "/usr/bin/python3", "-I", "-c", CHILD, name]
    try:
        done = subprocess.run([*argv, json.dumps(args)], capture_output=True, text=True, timeout=30)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        return json.loads(lines[-1][len("RESULT ") :]) if lines else {"raised": "no result"}
    except Exception as exc:
        return {"raised": type(exc).__name__}


TESTS = {
    "test_slugify": lambda: call("slugify", "Hello, World!") == {"value": "hello-world"},
    "test_word_count": lambda: (
        call("word_count", "one two  three\nfour") == {"value": 4}
        and call("word_count", "") == {"value": 0}
    ),
}
for name, test in TESTS.items():
    print(f"{N} {'PASS' if test() else 'FAIL'} {name}", flush=True)
