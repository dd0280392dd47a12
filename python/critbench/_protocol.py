"""The protocol loop a critic and a writer share (docs/PROTOCOL.md): the hello, the config, then
one request at a time, each answered or refused with the error of the exception it raised."""

import concurrent.futures
import inspect
import json
import sys
import threading

PROTOCOL_VERSION = 2


def serve(hello, configure, kind, answer, stdin=None, stdout=None, concurrency=1):
    """Writes `hello`, then answers every request of `kind` (`"request"`, `"write"`) with
    `answer(body, line)` (the request's body and its whole line), a dict of the answer's keys,
    until critbench closes the input. With `concurrency` above 1 the hello asks for the pipelined
    form, and up to that many requests are answered at once on threads, each as it is done."""
    out = stdout if stdout is not None else sys.stdout
    source = stdin if stdin is not None else sys.stdin
    sending = threading.Lock()
    pool = None
    if concurrency > 1:
        hello = dict(hello, pipelined=True)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=concurrency)

    def send(message):
        with sending:
            out.write(json.dumps(message) + "\n")
            out.flush()

    def reply(message, ident):
        try:
            send(dict(answer(message[kind], message), id=ident))
        except Exception as error:
            send({"id": ident, "error": describe(error)})

    # The pipelined form sends each task once per process, under a key its requests name.
    tasks = {}

    send(hello)
    # What the functions print must not reach the protocol's stream.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        for line in source:
            if not line.strip():
                continue
            message = json.loads(line)
            if "close" in message:
                for key in message["close"]:
                    tasks.pop(key, None)
                continue
            ident = message["id"]
            if "open" in message:
                tasks[message["open"]] = message["task"]
                send({"id": ident, "ok": True})
                continue
            if "task_key" in message:
                if message["task_key"] not in tasks:
                    send({"id": ident, "error": "no task open as %s" % message["task_key"]})
                    continue
                message[kind]["task"] = tasks[message["task_key"]]
            if "config" in message:
                try:
                    if configure is not None:
                        configure(message["config"])
                except Exception as error:  # the program refuses its config
                    send({"id": ident, "error": describe(error)})
                    continue
                send({"id": ident, "ok": True})
                continue
            if pool is None:
                reply(message, ident)
            else:
                pool.submit(reply, message, ident)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        sys.stdout = real_stdout


def describe(error):
    """An exception as one line of an error answer."""
    text = str(error).strip().replace("\n", " ")
    return "%s: %s" % (type(error).__name__, text) if text else type(error).__name__


def takes_keyword(function, keyword):
    """Whether `function` accepts `keyword` as a keyword argument."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
