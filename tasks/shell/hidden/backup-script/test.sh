#!/bin/bash
# Hidden tests for shell/backup-script: run the agent's script, then check what it did.
# Result lines start with the grader's nonce; the agent's script never sees it.
N="$HARNESS_RESULT_NONCE"; unset HARNESS_RESULT_NONCE
if [ ! -x app/backup.sh ]; then echo "$N FAIL backup_created (app/backup.sh is not executable)"; exit 1; fi
rm -rf data/backup
./app/backup.sh || echo "script exited with $?"
if [ -f data/backup/app.conf ]; then echo "$N PASS backup_created"; else echo "$N FAIL backup_created"; fi
if cmp -s etc/app.conf data/backup/app.conf; then echo "$N PASS backup_identical"; else echo "$N FAIL backup_identical"; fi
