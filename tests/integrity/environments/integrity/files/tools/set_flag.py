"""Tool: write the flag (arguments as JSON on stdin)."""

import json
import sys

value = json.load(sys.stdin)["value"]
with open("app/flag.txt", "w") as fh:
    fh.write(str(value) + "\n")
print("flag set")
