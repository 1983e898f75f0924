"""State dump: the store as JSON."""

import json
from pathlib import Path

print(json.dumps(json.loads(Path("data.json").read_text()), sort_keys=True))
