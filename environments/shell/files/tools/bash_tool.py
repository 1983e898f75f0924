#!/usr/bin/env python3
"""The ``bash`` tool: run {"command": "..."} with bash in the workdir; print its output.

Exits with the command's exit code (2 for bad arguments), so a failing command is an error
result for the agent.
"""

import json
import subprocess
import sys


def main() -> int:
    try:
        args = json.loads(sys.stdin.read() or "{}")
    except json.JSONDecodeError as exc:
        print(f"error: arguments are not valid JSON: {exc}", file=sys.stderr)
        return 2
    command = args.get("command") if isinstance(args, dict) else None
    if not isinstance(command, str) or not command.strip():
        print('error: give {"command": "..."}', file=sys.stderr)
        return 2
    timeout = args.get("timeout", 60)
    try:
        # bytes in, bytes out: output that is not UTF-8 (a file name, a binary) passes as is
        proc = subprocess.run(["bash", "-c", command], capture_output=True, timeout=float(timeout))
    except subprocess.TimeoutExpired:
        print(f"error: command timed out after {timeout}s", file=sys.stderr)
        return 124
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
