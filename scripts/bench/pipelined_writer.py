#!/usr/bin/env python3
"""A trivial writer program over the pipelined form of the protocol (docs/PROTOCOL.md, Writer
programs): the drafts of scripts/bench/trivial_writer.py (a first draft is the task's id, a
revision the draft with a mark appended), as fast as plain Python reasonably answers them.

Like scripts/bench/scripted_critic.py it reads whatever input is waiting (os.read), answers every
request in it and writes the answers in one go: with many requests in flight, a batch costs a few
system calls, not a few per request. Each request line is parsed with json.loads; the answers are
formatted by hand (the draft through json.dumps, which escapes it).

`--lazy` parses less: a request's line is a task of a kilobyte or more around a few small fields,
and json.loads of it is most of what this program spends. It reads the id, the draft and (for a
first draft) the task's id where critbench writes them, with json's raw_decode, and leaves the
rest unread. The bench times both: a real writer reads the task's prompt, so the first is the
figure of a writer program; the second says what the parse of the task costs.
"""

import json
import os
import sys


def write(data):
    while data:
        data = data[os.write(1, data):]


def lazy_answer(line, decode=json.JSONDecoder().raw_decode, dumps=json.dumps):
    """The answer to one line, reading only what the draft needs. critbench writes a request as
    {"id":N,"write":{"round":R,"draft":D,...,"task":{"id":"...",...}}} with no spaces, fields in
    that order; within a JSON string every quote is escaped, so `,"task":{"id":` after the draft
    can only be the task's own (a first draft's critique is null and its hints have no task)."""
    text = line.decode()
    comma = text.index(",")
    id_ = int(text[6:comma])
    if text.startswith('"config"', comma + 1):
        return '{"id": %d, "ok": true}' % id_
    at = text.index('"draft":', comma) + 8
    if text.startswith("null", at):
        draft = decode(text, text.index(',"task":{"id":', at) + 14)[0]
    else:
        draft = decode(text, at)[0] + " +"
    return '{"id": %d, "draft": %s}' % (id_, dumps(draft))


def main():
    if "--lazy" in sys.argv:
        return serve_lazy()
    loads, dumps = json.loads, json.dumps
    write(b'{"protocol": 2, "name": "pipelined-writer", "version": "1.0.0", "pipelined": true}\n')
    pending = b""
    read = os.read
    while True:
        chunk = read(0, 1 << 20)
        if not chunk:
            return
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        answers = []
        for line in lines:
            if not line:
                continue
            message = loads(line)
            request = message.get("write")
            if request is None:
                # The config.
                answers.append('{"id": %d, "ok": true}' % message["id"])
                continue
            draft = request["draft"]
            draft = request["task"]["id"] if draft is None else draft + " +"
            answers.append('{"id": %d, "draft": %s}' % (message["id"], dumps(draft)))
        if answers:
            answers.append("")
            write("\n".join(answers).encode())


def serve_lazy():
    write(b'{"protocol": 2, "name": "pipelined-writer-lazy", "version": "1.0.0", "pipelined": true}\n')
    pending = b""
    read = os.read
    while True:
        chunk = read(0, 1 << 20)
        if not chunk:
            return
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        answers = [lazy_answer(line) for line in lines if line]
        if answers:
            answers.append("")
            write("\n".join(answers).encode())


if __name__ == "__main__":
    main()
