# Shared by every step's test.sh (the task's tests/ lies under each step's).
reward() { mkdir -p /logs/verifier; echo "$1" > /logs/verifier/reward.txt; exit 0; }
