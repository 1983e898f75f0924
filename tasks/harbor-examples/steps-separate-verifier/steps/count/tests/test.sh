#!/bin/bash
source /tests/common.sh
separate || reward 0
[ "$(line 1)" = "$(cat /opt/verifier/errors)" ] && reward 1
reward 0
