"""Tool kv_get: {"key": str} on stdin -> the value on stdout."""

import json
import sys
from pathlib import Path

args = json.load(sys.stdin)
data = json.loads(Path("data.json").read_text())
if args.get("key") not in data:
    print(f"error: no key {args.get('key')!r}", file=sys.stderr)
    sys.exit(1)
print(data[args["key"]])
