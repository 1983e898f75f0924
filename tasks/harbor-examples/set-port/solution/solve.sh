#!/bin/bash
python3 - <<'PY'
import json
with open("config.json") as fh:
    config = json.load(fh)
config["port"] = 8081
with open("config.json", "w") as fh:
    json.dump(config, fh, indent=2)
PY
