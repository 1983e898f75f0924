"""State dump: the flag and a hash of the app module, as JSON."""

import hashlib
import json
import pathlib

flag = pathlib.Path("app/flag.txt")
value = flag.read_text().strip() if flag.exists() else None
code = hashlib.sha256(pathlib.Path("app/calc.py").read_bytes()).hexdigest()[:16]
print(json.dumps({"kv": {"flag": value, "calc": code}}))
