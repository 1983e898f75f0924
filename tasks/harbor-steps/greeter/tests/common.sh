# Shared by every step's test.sh (the task's tests/ lies under each step's).
reward() { mkdir -p /logs/verifier; echo "$1" > /logs/verifier/reward.txt; exit 0; }
# The agent's program runs through the harness's $HARNESS_AS_AGENT where there is one (as
# the unprivileged user, with a clean environment: it cannot write the reward or rewrite
# this running test); elsewhere (Harbor itself) it runs as it is.
agent() { if [ -n "${HARNESS_AS_AGENT:-}" ]; then "$HARNESS_AS_AGENT" "$@"; else "$@"; fi; }
