#!/bin/bash
source /tests/common.sh
[ -x /app/greet.sh ] && [ "$(agent /app/greet.sh)" = "hello" ] && reward 1
reward 0
