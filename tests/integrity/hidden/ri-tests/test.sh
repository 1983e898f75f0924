#!/bin/bash
# Hidden test: the code under test runs only as the agent's user, through $HARNESS_AS_AGENT
# (it can neither read this process's nonce nor touch this file); its printed result comes
# back as data, compared here.
N="$HARNESS_RESULT_NONCE"
got=$("$HARNESS_AS_AGENT" /usr/bin/python3 -I -c 'import sys; sys.path.insert(0, "app"); import calc; print(calc.add(2, 3))' </dev/null 2>/dev/null | tail -n 1)
if [ "$got" = 5 ]; then echo "$N PASS test_add"; else echo "$N FAIL test_add"; fi
