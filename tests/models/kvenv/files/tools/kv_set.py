"""Tool kv_set: {"key": str, "value": str} on stdin -> "ok"; writes data.json."""

import json
import sys
from pathlib import Path

args = json.load(sys.stdin)
store = Path("data.json")
data = json.loads(store.read_text())
data[str(args["key"])] = str(args["value"])
store.write_text(json.dumps(data, sort_keys=True))
print("ok")
