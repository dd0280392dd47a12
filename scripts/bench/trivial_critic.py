#!/usr/bin/env python3
"""A trivial command critic over the pipelined form of the protocol (docs/PROTOCOL.md), as a
newcomer would write one: it parses every message with json.loads and writes every answer with
json.dumps. Its score is the draft's length modulo 11, so its loops are not the scripted critic's;
the bench times it to show what the pipe path costs a critic that does almost nothing.

Like scripts/bench/scripted_critic.py it reads whatever input is waiting and answers every message
in it in one write.
"""

import json
import os

HELLO = {"protocol": 2, "pipelined": True, "name": "trivial-py", "version": "1.0.0", "score_range": [0, 10],
         "thread_safe": True}


def write(data):
    while data:
        data = data[os.write(1, data):]


def answer(message):
    """The answer to one message, or None for a close (which has none)."""
    if "task_key" in message:
        draft = message["request"]["draft"]
        return {"id": message["id"], "critique": {"score": len(draft) % 11, "issues": []}}
    if "close" in message:
        return None
    # An open, or the config: both are answered `ok`.
    return {"id": message["id"], "ok": True}


def main():
    write((json.dumps(HELLO) + "\n").encode())
    pending = b""
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        answers = [answer(json.loads(line)) for line in lines if line.strip()]
        answers = [json.dumps(a) for a in answers if a is not None]
        if answers:
            write(("\n".join(answers) + "\n").encode())


if __name__ == "__main__":
    main()
