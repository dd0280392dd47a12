"""The protocol loop a critic and a writer share (docs/PROTOCOL.md): the hello, the config, then
one request at a time, each answered or refused with the error of the exception it raised."""

import concurrent.futures
import inspect
import json
import os
import select
import sys
import threading

PROTOCOL_VERSION = 2


def serve(hello, configure, kind, answer, stdin=None, stdout=None, concurrency=1):
    """Writes `hello`, then answers every request of `kind` (`"request"`, `"write"`) with
    `answer(body, line)` (the request's body and its whole line), a dict of the answer's keys,
    until critbench closes the input. With `concurrency` above 1 the hello asks for the pipelined
    form, and up to that many requests are answered at once on threads, each as it is done.

    An `Exception` raised by `answer` (or `configure`) is that request's error answer, and serving
    goes on. Any other `BaseException` (`SystemExit` from `sys.exit`, `KeyboardInterrupt`) is
    answered the same way at once, and then ends serving: no further request is read or started,
    the requests already running on other threads are answered as they finish, the ones not
    started are left unanswered (critbench sends them to a fresh process), and the exception is
    raised again from `serve`, so that the program ends as it asked."""
    out = stdout if stdout is not None else sys.stdout
    source = stdin if stdin is not None else sys.stdin
    sending = threading.Lock()
    pool = None
    if concurrency > 1:
        hello = dict(hello, pipelined=True)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=concurrency)
    # The first BaseException a request raised, which ends serving; `wake` tells the reading
    # thread at once.
    stopping = []
    wake_read, wake_write = os.pipe()

    def send(message):
        with sending:
            out.write(json.dumps(message) + "\n")
            out.flush()

    def stop(error):
        with sending:
            if stopping:
                return
            stopping.append(error)
        os.write(wake_write, b"x")

    def reply(message, ident):
        try:
            send(dict(answer(message[kind], message), id=ident))
        except Exception as error:
            send({"id": ident, "error": describe(error)})
        except BaseException as error:  # SystemExit, KeyboardInterrupt: answered, then serving ends
            send({"id": ident, "error": describe(error)})
            stop(error)

    # The pipelined form sends each task once per process, under a key its requests name.
    tasks = {}
    # The requests handed to the pool and not done.
    started = set()

    def drop_waiting():
        """On the way out early, the requests not started yet are dropped (left unanswered); the
        running ones still answer."""
        for future in list(started):
            future.cancel()

    send(hello)
    # What the functions print must not reach the protocol's stream.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        for line in _lines(source, wake_read):
            if stopping:
                break
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
                except BaseException as error:
                    send({"id": ident, "error": describe(error)})
                    raise
                send({"id": ident, "ok": True})
                continue
            if pool is None:
                reply(message, ident)
            else:
                future = pool.submit(reply, message, ident)
                started.add(future)
                future.add_done_callback(started.discard)
    except BaseException:
        drop_waiting()
        raise
    finally:
        if stopping:
            drop_waiting()
        if pool is not None:
            pool.shutdown(wait=True)
        sys.stdout = real_stdout
        os.close(wake_read)
        os.close(wake_write)
    if stopping:
        raise stopping[0]


def _lines(source, wake):
    """The lines of `source` as they come. From a file with a descriptor, its descriptor is read
    directly (nothing is read through the file object), watched with `select` beside the
    descriptor `wake`, which ends the lines as soon as it is readable; from any other iterable of
    lines (a list, `io.StringIO`), one after the other."""
    try:
        descriptor = source.fileno()
    except (AttributeError, OSError, ValueError):
        yield from source
        return
    pending = b""
    while True:
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8")
        ready, _, _ = select.select([descriptor, wake], [], [])
        if wake in ready:
            return
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            if pending.strip():
                yield pending.decode("utf-8")
            return
        pending += chunk


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
