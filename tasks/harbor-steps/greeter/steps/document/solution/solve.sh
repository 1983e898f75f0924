#!/bin/bash
printf '# greet.sh\n\nRun `./greet.sh` to print hello, or `./greet.sh NAME` to greet NAME.\n' > /app/README.md
