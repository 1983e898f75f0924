#!/usr/bin/env python3
"""Runs a tau-bench domain's own tool code: copied by ``harness import tau-bench`` into the
environment it writes, next to the domain's ``tau_bench`` tool modules and JSON data.

Standard library only (the sandbox has a bare python3). The domain's data is one JSON
document ``{table: {...}}`` (the data folder's files, named by ``domain.json``); a tool is
called as tau-bench's environment calls it, ``Tool.invoke(data=data, **args)``, and an
exception it raises becomes the output ``Error: <message>`` with the data as the tool left it.

    python3 -S tau_runner.py serve        tool server (harness/tools/server.py protocol)
    python3 -S tau_runner.py call TOOL    one call, arguments on stdin; the state is read from
                                          state.json (the data before the first call) and
                                          written back (the slow per-call mode)
    python3 -S tau_runner.py dump         print the state
    python3 -S tau_runner.py replay       JSON lines of action lists on stdin -> one line per
                                          list: the data after running them on fresh data
"""

from __future__ import annotations

import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.path.join(HERE, "state.json")


def domain() -> dict:
    with open(os.path.join(HERE, "domain.json")) as fh:
        return json.load(fh)


def fresh_data_text(spec: dict) -> str:
    """The domain's initial data as one JSON text (tables in the data module's order)."""
    parts = []
    for table, filename in spec["tables"]:
        with open(os.path.join(HERE, "data", filename)) as fh:
            parts.append(f"{json.dumps(table)}: {fh.read()}")
    return "{" + ", ".join(parts) + "}"


def tools(spec: dict) -> dict:
    """Tool name -> tau-bench tool class, from the domain's own ``ALL_TOOLS``."""
    sys.path.insert(0, HERE)
    module = importlib.import_module(spec["tools_module"])
    return {cls.get_info()["function"]["name"]: cls for cls in module.ALL_TOOLS}


def invoke(table: dict, data: dict, name: str, args: dict) -> tuple[bool, str]:
    """One call as tau-bench's ``Env.step`` makes it."""
    if name not in table:
        return False, f"Unknown action {name}"
    try:
        return True, str(table[name].invoke(data=data, **args))
    except Exception as exc:
        return False, f"Error: {exc}"


def load_state(spec: dict) -> dict:
    if os.path.exists(STATE):
        with open(STATE) as fh:
            return json.load(fh)
    return json.loads(fresh_data_text(spec))


def main(argv: list[str]) -> int:
    spec = domain()
    op = argv[1] if len(argv) > 1 else ""
    if op == "serve":
        sys.path.insert(0, HERE)
        from tool_server import serve

        table, data = tools(spec), load_state(spec)

        def make(name: str):
            def run(args: dict) -> str:
                ok, out = invoke(table, data, name, args)
                if not ok:
                    raise RuntimeError(out[len("Error: ") :] if out.startswith("Error: ") else out)
                return out

            return run

        serve({name: make(name) for name in table}, lambda: data)
        return 0
    if op == "dump":
        json.dump(load_state(spec), sys.stdout)
        return 0
    if op == "call" and len(argv) == 3:
        table, data = tools(spec), load_state(spec)
        args = json.loads(sys.stdin.read() or "{}")
        ok, out = invoke(table, data, argv[2], args)
        with open(STATE, "w") as fh:
            json.dump(data, fh)
        print(out)
        return 0 if ok else 1
    if op == "replay":
        table, text = tools(spec), fresh_data_text(spec)
        for line in sys.stdin:
            data = json.loads(text)
            for action in json.loads(line):
                invoke(table, data, action["name"], action["kwargs"])
            sys.stdout.write(json.dumps(data) + "\n")
            sys.stdout.flush()
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
