#!/bin/bash
# Reward 1 when /app/error_count.txt holds the number of ERROR-level lines, else 0.
mkdir -p /logs/verifier
if [ "$(cat /app/error_count.txt 2>/dev/null | tr -d '[:space:]')" = "3" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
