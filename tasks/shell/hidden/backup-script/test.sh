#!/bin/bash
# Hidden tests for shell/backup-script: run the agent's script, then check what it did.
if [ ! -x app/backup.sh ]; then echo "FAIL backup_created (app/backup.sh is not executable)"; exit 1; fi
rm -rf data/backup
./app/backup.sh || echo "script exited with $?"
if [ -f data/backup/app.conf ]; then echo "PASS backup_created"; else echo "FAIL backup_created"; fi
if cmp -s etc/app.conf data/backup/app.conf; then echo "PASS backup_identical"; else echo "FAIL backup_identical"; fi
