#!/usr/bin/env python3
"""The `scripted` critic as a command critic in Python, over the pipelined form of the protocol
(docs/PROTOCOL.md).

Round k gets task.critiques[min(k, len - 1)], as plugins/scripted does, so a run with it records
what the in-process plugin records (crates/cli/tests/cli/same_outputs.rs checks that) and the bench
times the command-critic path on the same work. It reads whatever input is waiting, answers every
message in it and writes the answers in one go: with many requests in flight, a batch costs a few
system calls, not a few per request.

The pipelined form sends a task once per process for all its loops in flight (`open`); the critic
parses it then and keeps, per open key, the task's critiques as the JSON text it answers with (what
it keeps is the task's, not a loop's, as the protocol asks). Each round's message is parsed in full
too (it is small: the round and the draft), and a `close` forgets its keys.
"""

import json
import os
import sys

# `--simple` speaks the simple form instead: critbench then sends the whole request, task included,
# one request per round trip. The bench's comparison row; the critique is the same.
HELLO = {"protocol": 2, "pipelined": "--simple" not in sys.argv, "name": "scripted-py", "version": "1.0.0",
         "score_range": [0, 10], "thread_safe": True}
NO_CRITIQUES = "the task has no `critiques`"


def write(data):
    while data:
        data = data[os.write(1, data):]


def scripted(critiques, round_):
    """The critique text of `round_` from a task's critiques (already JSON text each)."""
    return critiques[min(round_, len(critiques) - 1)]


def main():
    loads, dumps = json.loads, json.dumps
    write((dumps(HELLO) + "\n").encode())
    # The pipelined form: the JSON text of each open task's critiques, by key.
    tasks = {}
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
            if "task_key" in message:
                critiques = tasks.get(message["task_key"])
                if critiques is None:
                    answers.append(dumps({"id": message["id"], "error": "task %s is not open" % message["task_key"]}))
                elif not critiques:
                    answers.append(dumps({"id": message["id"], "error": NO_CRITIQUES}))
                else:
                    critique = scripted(critiques, message["request"]["round"])
                    answers.append('{"id": %d, "critique": %s}' % (message["id"], critique))
            elif "open" in message:
                tasks[message["open"]] = [dumps(c) for c in message["task"].get("critiques") or []]
                answers.append('{"id": %d, "ok": true}' % message["id"])
            elif "close" in message:
                for key in message["close"]:
                    tasks.pop(key, None)
            elif "config" in message:
                answers.append('{"id": %d, "ok": true}' % message["id"])
            else:
                request = message["request"]
                critiques = request["task"].get("critiques") or []
                if not critiques:
                    answers.append(dumps({"id": message["id"], "error": NO_CRITIQUES}))
                    continue
                critique = critiques[min(request["round"], len(critiques) - 1)]
                answers.append('{"id": %d, "critique": %s}' % (message["id"], dumps(critique)))
        if answers:
            write(("\n".join(answers) + "\n").encode())


if __name__ == "__main__":
    main()
