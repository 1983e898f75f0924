#!/bin/bash
source /tests/common.sh
# The earlier steps' work must still hold.
[ "$(agent /app/greet.sh Ada)" = "hello, Ada!" ] || reward 0
grep -q "greet.sh" /app/README.md 2>/dev/null && reward 1
reward 0
