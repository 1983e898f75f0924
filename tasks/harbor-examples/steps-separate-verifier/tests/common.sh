# Shared by both steps' test.sh (the task's tests/ lies under each step's).
reward() { mkdir -p /logs/verifier; echo "$1" > /logs/verifier/reward.txt; exit 0; }
# Graded in the verifier's image, never in the agent's: its expected values are here, the
# agent's log is not (only the artifacts were copied).
separate() { [ -f /opt/verifier/errors ] && [ ! -e /app/service.log ]; }
line() { sed -n "${1}p" /app/counts.txt 2>/dev/null | tr -d '[:space:]'; }
