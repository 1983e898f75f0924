#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import collections, json, re
line = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" (\d{3}) (\d+|-)$')
counts = collections.Counter()
with open("/app/access.log") as fh:
    for text in fh:
        m = line.match(text.strip())
        if m:
            counts[m.group(1)] += 1
with open("/app/status_counts.json", "w") as fh:
    json.dump(dict(sorted(counts.items())), fh, indent=2)
PY
