#!/usr/bin/env python3
"""A trivial writer program over the simple form of the protocol (docs/PROTOCOL.md, Writer
programs), as a newcomer would write one: json.loads of every request, json.dumps of every answer.
A first draft is the task's id, a revision the draft with a mark appended; the bench times it
against the scripted backend in process to show what a writer program's pipe costs a loop.
"""

import json
import sys


def main():
    out = sys.stdout
    out.write(json.dumps({"protocol": 2, "name": "trivial-writer", "version": "1.0.0"}) + "\n")
    out.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if "config" in message:
            answer = {"id": message["id"], "ok": True}
        else:
            write = message["write"]
            draft = write["task"]["id"] if write["draft"] is None else write["draft"] + " +"
            answer = {"id": message["id"], "draft": draft}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
