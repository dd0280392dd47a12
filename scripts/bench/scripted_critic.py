#!/usr/bin/env python3
"""The `scripted` critic as a command critic in Python, over protocol 3 (docs/PROTOCOL.md).

Round k gets task.critiques[min(k, len - 1)], as plugins/scripted does, so a run with it records
what the in-process plugin records (crates/cli/tests/cli/same_outputs.rs checks that) and the bench
times the command-critic path on the same work. It reads whatever input is waiting, answers every
request in it and writes the answers in one go: with many requests in flight, a batch costs a few
system calls, not a few per request.
"""

import json
import os
import sys

# `--protocol 2` says version 2 instead: critbench then sends one request per round trip (the bench's
# figure for the path before protocol 3); the critic itself is the same.
PROTOCOL = int(sys.argv[sys.argv.index("--protocol") + 1]) if "--protocol" in sys.argv else 3
HELLO = {"protocol": PROTOCOL, "name": "scripted-py", "version": "1.0.0", "score_range": [0, 10], "thread_safe": True}


def write(data):
    while data:
        data = data[os.write(1, data):]


def main():
    loads, dumps = json.loads, json.dumps
    write((dumps(HELLO) + "\n").encode())
    pending = b""
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        answers = []
        for line in lines:
            if not line.strip():
                continue
            message = loads(line)
            if "config" in message:
                answers.append('{"id": %d, "ok": true}' % message["id"])
                continue
            request = message["request"]
            critiques = request["task"].get("critiques") or []
            if not critiques:
                answers.append(dumps({"id": message["id"], "error": "the task has no `critiques`"}))
                continue
            critique = critiques[min(request["round"], len(critiques) - 1)]
            answers.append('{"id": %d, "critique": %s}' % (message["id"], dumps(critique)))
        if answers:
            write(("\n".join(answers) + "\n").encode())


if __name__ == "__main__":
    main()
