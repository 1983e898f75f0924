#!/bin/bash
# Reward 1 when the copied artifact holds the expected sum and nothing else of the agent's
# environment is here (the verifier runs in its own image), else 0.
mkdir -p /logs/verifier
reward=0
if [ "$(tr -d '[:space:]' < /app/total.txt 2>/dev/null)" = "$(cat /opt/verifier/expected.txt)" ] \
    && [ ! -e /app/amounts.txt ]; then
  reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
