#!/usr/bin/env python3
"""A trivial writer program over the pipelined form of the protocol (docs/PROTOCOL.md, Writer
programs): the drafts of scripts/bench/trivial_writer.py (a first draft is the task's id, a
revision the draft with a mark appended), as fast as plain Python reasonably answers them.

Like scripts/bench/scripted_critic.py it reads whatever input is waiting (os.read), answers every
request in it and writes the answers in one go: with many requests in flight, a batch costs a few
system calls, not a few per request. Each request line is parsed with json.loads; the answers are
formatted by hand (the draft through json.dumps, which escapes it).

critbench sends each task once per process (`{"id", "open": K, "task": {...}}`, answered `ok`),
and each request names it by key (`{"id", "task_key": K, "write": {...}}`); `{"close": [K, ...]}`
forgets keys. This program keeps each open task's id, all a draft here needs of it.

`--lazy` parses less: it reads only the id, the key and the draft of each request line, with
json's raw_decode, and an open's id and key and the task's id, leaving the rest unread. The bench
times both: a real writer reads the task's prompt, so the first is the figure of a writer
program; the second says what parsing the rest costs.
"""

import json
import os
import sys


def write(data):
    while data:
        data = data[os.write(1, data):]


def lazy_answer(line, tasks, decode=json.JSONDecoder().raw_decode, dumps=json.dumps):
    """The answer to one line, reading only what the draft needs, or None for a close. critbench
    writes {"id":N,"open":K,"task":{"id":"...",...}}, {"id":N,"task_key":K,"write":{"round":R,
    "draft":D,...}} and {"close":[...]} with no spaces, fields in that order."""
    text = line.decode()
    if text.startswith('{"close":'):
        for key in json.loads(text)["close"]:
            tasks.pop(key, None)
        return None
    comma = text.index(",")
    id_ = int(text[6:comma])
    if text.startswith('"config"', comma + 1):
        return '{"id": %d, "ok": true}' % id_
    if text.startswith('"open":', comma + 1):
        key_end = text.index(",", comma + 1)
        tasks[int(text[comma + 8:key_end])] = decode(text, text.index('"id":', key_end) + 5)[0]
        return '{"id": %d, "ok": true}' % id_
    key_end = text.index(",", comma + 1)
    at = text.index('"draft":', key_end) + 8
    if text.startswith("null", at):
        draft = tasks[int(text[comma + 12:key_end])]
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
    tasks = {}
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
                if "close" in message:
                    for key in message["close"]:
                        tasks.pop(key, None)
                    continue
                if "open" in message:
                    tasks[message["open"]] = message["task"]["id"]
                # An open, or the config.
                answers.append('{"id": %d, "ok": true}' % message["id"])
                continue
            draft = request["draft"]
            draft = tasks[message["task_key"]] if draft is None else draft + " +"
            answers.append('{"id": %d, "draft": %s}' % (message["id"], dumps(draft)))
        if answers:
            answers.append("")
            write("\n".join(answers).encode())


def serve_lazy():
    write(b'{"protocol": 2, "name": "pipelined-writer-lazy", "version": "1.0.0", "pipelined": true}\n')
    pending = b""
    read = os.read
    tasks = {}
    while True:
        chunk = read(0, 1 << 20)
        if not chunk:
            return
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        answers = [answer for answer in (lazy_answer(line, tasks) for line in lines if line) if answer is not None]
        if answers:
            answers.append("")
            write("\n".join(answers).encode())


if __name__ == "__main__":
    main()
