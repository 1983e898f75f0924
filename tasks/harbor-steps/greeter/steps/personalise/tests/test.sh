#!/bin/bash
source /tests/common.sh
[ "$(agent /app/greet.sh)" = "hello" ] || reward 0
[ "$(agent /app/greet.sh Ada)" = "hello, Ada!" ] || reward 0
[ "$(agent /app/greet.sh 'Grace Hopper')" = "hello, Grace Hopper!" ] || reward 0
reward 1
