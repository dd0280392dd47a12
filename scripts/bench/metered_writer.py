#!/usr/bin/env python3
"""A writer program in the pipelined form (docs/PROTOCOL.md, Writer programs) that asks a model
for every draft through critbench's metered endpoint: for each request one chat call to the
request's `model.base_url` with its `model.api_key`, the answer's text the draft. The bench's
section 6c runs it against critbench-bench-server to time the path writer → metered endpoint →
critbench's client → server with many calls in flight.

It must keep as many calls in flight as critbench sends it requests (`[writer] in_flight`, 1,024
in the bench), so it is one asyncio event loop with no coroutine per call: the standard library's
transports and protocols, HTTP/1.1 with keep-alive written and parsed by hand, one connection per
call in flight (up to `--connections`, default 1,024: a call waits for a free connection beyond
that). Requests are read as they come (whatever is waiting on stdin, every line answered as its
call returns) and the answers that are ready are written together, one write per turn of the loop.
Standard library only.

    python3 metered_writer.py [--connections N]
"""

import asyncio
import collections
import json
import os
import socket
import sys
from urllib.parse import urlsplit

HELLO = b'{"protocol": 2, "name": "metered-writer", "version": "1.0.0", "pipelined": true}\n'


def write_all(data):
    while data:
        data = data[os.write(1, data):]


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection to the endpoint, one call on it at a time."""

    def __init__(self, pool):
        self.pool = pool
        self.transport = None
        self.buffer = bytearray()
        self.body_at = -1
        self.length = 0
        self.status = 0
        self.done = None  # the callback of the call in flight: done(status, body)

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pool.opened(self)

    def send(self, head, body, done):
        self.done = done
        self.transport.write(head + body)

    def data_received(self, data):
        buffer = self.buffer
        buffer += data
        while True:
            if self.body_at < 0:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
                self.status = int(head[0].split(" ", 2)[1])
                self.length = 0
                for line in head[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        self.length = int(value)
                self.body_at = end + 4
            stop = self.body_at + self.length
            if len(buffer) < stop:
                return
            body = bytes(buffer[self.body_at:stop])
            del buffer[:stop]
            self.body_at = -1
            done, self.done = self.done, None
            self.pool.release(self)
            if done is not None:
                done(self.status, body)
            if not buffer:
                return

    def connection_lost(self, exc):
        done, self.done = self.done, None
        self.pool.lost(self)
        if done is not None:
            done(0, f"the connection to the endpoint closed: {exc}".encode())


class Pool:
    """Connections to one host, opened as calls need them up to `most`."""

    def __init__(self, loop, host, port, most):
        self.loop, self.host, self.port, self.most = loop, host, port, most
        self.idle = []
        self.queue = collections.deque()
        self.count = 0

    def call(self, head, body, done):
        if self.idle:
            self.idle.pop().send(head, body, done)
            return
        self.queue.append((head, body, done))
        if self.count < self.most:
            self.count += 1
            self.loop.create_task(self.open())

    async def open(self):
        try:
            await self.loop.create_connection(lambda: Connection(self), self.host, self.port)
        except OSError as error:
            self.count -= 1
            if self.queue:
                self.queue.popleft()[2](0, f"cannot connect to {self.host}:{self.port}: {error}".encode())

    def opened(self, connection):
        self.release(connection)

    def release(self, connection):
        if self.queue:
            connection.send(*self.queue.popleft())
        else:
            self.idle.append(connection)

    def lost(self, connection):
        self.count -= 1
        if connection in self.idle:
            self.idle.remove(connection)


class Writer:
    def __init__(self, loop, connections):
        self.loop = loop
        self.connections = connections
        self.pools = {}
        self.answers = []
        self.flushing = False
        self.pending = b""
        # The tasks open on this process, by key.
        self.tasks = {}
        self.done = loop.create_future()

    def stdin_ready(self):
        chunk = os.read(0, 1 << 20)
        if not chunk:
            self.loop.remove_reader(0)
            self.flush()
            self.done.set_result(None)
            return
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            if line:
                self.request(json.loads(line))

    def request(self, message):
        if "close" in message:
            for key in message["close"]:
                self.tasks.pop(key, None)
            return
        id_ = message["id"]
        write = message.get("write")
        if write is None:
            if "open" in message:
                # critbench sends each task once per process, under a key its requests name.
                self.tasks[message["open"]] = message["task"]
            # An open, or the config.
            self.answer('{"id": %d, "ok": true}' % id_)
            return
        model = write.get("model")
        if not model:
            self.answer(json.dumps({"id": id_, "error": "no `model` in the request: run with an [openai] table"}))
            return
        task = self.tasks[message["task_key"]]
        messages = [{"role": "user", "content": task["prompt"]}]
        if write["draft"] is not None:
            critique = write["critique"]
            ask = "Revise the draft."
            if critique:
                ask += " Issues: " + "; ".join(str(issue) for issue in critique.get("issues") or [])
            messages += [{"role": "assistant", "content": write["draft"]}, {"role": "user", "content": ask}]
        url = urlsplit(model["base_url"])
        pool = self.pools.get(url.netloc)
        if pool is None:
            pool = self.pools[url.netloc] = Pool(self.loop, url.hostname, url.port or 80, self.connections)
        body = json.dumps({"model": "bench", "messages": messages}).encode()
        head = (f"POST {url.path.rstrip('/')}/chat/completions HTTP/1.1\r\nHost: {url.netloc}\r\n"
                f"Authorization: Bearer {model['api_key']}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()

        def done(status, answer):
            if status == 200:
                try:
                    draft = json.loads(answer)["choices"][0]["message"]["content"]
                except (ValueError, KeyError, IndexError, TypeError) as error:
                    self.answer(json.dumps({"id": id_, "error": f"an answer without a completion: {error}"}))
                    return
                self.answer('{"id": %d, "draft": %s}' % (id_, json.dumps(draft)))
            else:
                text = answer[:500].decode("utf-8", "replace")
                self.answer(json.dumps({"id": id_, "error": f"the endpoint answered {status}: {text}"}))

        pool.call(head, body, done)

    def answer(self, line):
        self.answers.append(line)
        if not self.flushing:
            self.flushing = True
            self.loop.call_soon(self.flush)

    def flush(self):
        self.flushing = False
        if self.answers:
            self.answers.append("")
            data = "\n".join(self.answers).encode()
            self.answers = []
            write_all(data)


async def main():
    connections = 1024
    if "--connections" in sys.argv:
        connections = int(sys.argv[sys.argv.index("--connections") + 1])
    write_all(HELLO)
    loop = asyncio.get_running_loop()
    writer = Writer(loop, connections)
    loop.add_reader(0, writer.stdin_ready)
    await writer.done


if __name__ == "__main__":
    asyncio.run(main())
