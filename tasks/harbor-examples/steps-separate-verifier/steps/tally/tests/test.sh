#!/bin/bash
source /tests/common.sh
separate || reward 0
# The first step's line must still be there: the agent's sandbox lived on between the steps.
[ "$(line 1)" = "$(cat /opt/verifier/errors)" ] || reward 0
[ "$(line 2)" = "$(cat /opt/verifier/warnings)" ] && reward 1
reward 0
