#!/bin/bash
source /tests/common.sh
# The earlier steps' work must still hold.
[ "$(agent /app/greet.sh Ada)" = "hello, Ada!" ] || reward 0
# Read as the agent too: a README that is a link to a file of the grader's reads as nothing.
agent cat /app/README.md 2>/dev/null | grep -q "greet.sh" && reward 1
reward 0
