#!/bin/bash
source /tests/common.sh
[ "$(/app/greet.sh)" = "hello" ] || reward 0
[ "$(/app/greet.sh Ada)" = "hello, Ada!" ] || reward 0
[ "$(/app/greet.sh 'Grace Hopper')" = "hello, Grace Hopper!" ] || reward 0
reward 1
