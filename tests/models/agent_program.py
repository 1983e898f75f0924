"""A tiny external agent for the command-agent tests (stdlib only).

It talks to OPENAI_BASE_URL with OPENAI_API_KEY, offers the tools listed in HARNESS_TOOLS,
runs each tool call itself (the tool command with JSON arguments on stdin, in
HARNESS_WORKDIR), appends JSONL events to HARNESS_TRAJECTORY and prints the final answer
as its last stdout line. ``--answer-file`` writes the answer to HARNESS_ANSWER_FILE instead;
``--dump-env`` records its whole environment as a trajectory note.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request


def log(event):
    with open(os.environ["HARNESS_TRAJECTORY"], "a") as fh:
        fh.write(json.dumps(event) + "\n")


def chat(messages, tools):
    body = json.dumps({"model": "program-picked-model", "messages": messages, "tools": tools})
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=body.encode(),
        headers={
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        print(f"model error {exc.code}: {exc.read().decode()}", file=sys.stderr)
        sys.exit(3)


def main():
    instruction = sys.stdin.read()
    assert instruction == os.environ["HARNESS_INSTRUCTION"], "stdin and env disagree"
    if "--dump-env" in sys.argv:
        log({"kind": "note", "content": json.dumps(dict(os.environ))})
    with open(os.environ["HARNESS_TOOLS"]) as fh:
        specs = json.load(fh)
    tools = [
        {"type": "function", "function": {k: s[k] for k in ("name", "description", "parameters")}}
        for s in specs
    ]
    commands = {s["name"]: s["command"] for s in specs}
    messages = [{"role": "user", "content": instruction}]
    while True:
        reply = chat(messages, tools)["choices"][0]["message"]
        messages.append(reply)
        if not reply.get("tool_calls"):
            break
        for call in reply["tool_calls"]:
            fn = call["function"]
            proc = subprocess.run(
                commands[fn["name"]],
                shell=True,
                input=fn["arguments"],
                capture_output=True,
                text=True,
                cwd=os.environ["HARNESS_WORKDIR"],
            )
            out = proc.stdout + proc.stderr
            log(
                {
                    "kind": "tool_call",
                    "tool": fn["name"],
                    "args": json.loads(fn["arguments"]),
                    "content": out,
                    "ok": proc.returncode == 0,
                }
            )
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})
    answer = reply.get("content") or ""
    print("thinking... done")
    if "--answer-file" in sys.argv:
        with open(os.environ["HARNESS_ANSWER_FILE"], "w") as fh:
            fh.write(answer)
    else:
        print(answer)


if __name__ == "__main__":
    main()
