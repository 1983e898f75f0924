#!/bin/bash
# Hidden tests for shell/backup-script: run the agent's script as the agent's user (through
# $HARNESS_AS_AGENT: it cannot read this process or this file), then check what it did.
N="$HARNESS_RESULT_NONCE"
if [ ! -x app/backup.sh ]; then echo "$N FAIL backup_created (app/backup.sh is not executable)"; exit 1; fi
"$HARNESS_AS_AGENT" /bin/bash -c 'rm -rf data/backup && exec ./app/backup.sh' </dev/null || echo "script exited with $?"
copy=data/backup/app.conf
if [ -f "$copy" ] && [ ! -L "$copy" ]; then echo "$N PASS backup_created"; else echo "$N FAIL backup_created"; fi
if [ ! -L "$copy" ] && cmp -s etc/app.conf "$copy"; then echo "$N PASS backup_identical"; else echo "$N FAIL backup_identical"; fi
