#!/usr/bin/env python3
"""A latency-injecting TCP proxy for benchmarks: loopback only, bounded.

Listens on 127.0.0.1:LISTEN and forwards each connection to 127.0.0.1:TARGET (moto_server),
holding every HTTP request DELAY_MS before it goes on, as a real AWS endpoint's round trip
would. It counts the requests and the most of them in flight at once (a request is in flight
from its first bytes until the first bytes of its answer), and writes them as JSON to
STATS_FILE when it gets SIGTERM or SIGINT:

    {"requests": N, "max_in_flight": M, "delay_ms": D, "kinds": {"PUT packages": K, ...}}

With `LATENCY_PROXY_TIMELINE=FILE`, each request's start (seconds since the counts began) and
kind are also appended to FILE, one tab-separated line each: a timeline of the sync.

`SIGUSR1` starts the counts afresh (the benchmark sends it right before the request it
times). A request's kind is its DynamoDB operation (`X-Amz-Target`), or its method and the first
segment of its S3 key (the bucket's own segment dropped): what a profile of a sync counts.

Usage: bench/latency_proxy.py LISTEN TARGET DELAY_MS STATS_FILE
       (then point AWS_ENDPOINT_URL at http://127.0.0.1:LISTEN)

Bounds: at most MAX_CONNECTIONS connections at once (more wait in the listen backlog), reads
of at most CHUNK bytes, and nothing but loopback on either side.
"""

import asyncio
import json
import os
import signal
import sys
import time

MAX_CONNECTIONS = 512
CHUNK = 64 * 1024
METHODS = (b"GET ", b"PUT ", b"POST ", b"HEAD ", b"DELETE ", b"PATCH ")


class Stats:
    def __init__(self, delay_ms):
        self.delay_ms = delay_ms
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.kinds = {}
        self.began = time.monotonic()
        path = os.environ.get("LATENCY_PROXY_TIMELINE")
        self.timeline = open(path, "a", encoding="utf-8") if path else None

    def started(self, head):
        self.requests += 1
        kind = request_kind(head)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self.timeline:
            self.timeline.write(f"{time.monotonic() - self.began:.4f}\t{kind}\n")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def answered(self):
        self.in_flight = max(0, self.in_flight - 1)

    def restart(self):
        self.requests = 0
        self.max_in_flight = self.in_flight
        self.kinds = {}
        self.began = time.monotonic()

    def as_json(self):
        return {"requests": self.requests, "max_in_flight": self.max_in_flight, "delay_ms": self.delay_ms,
                "kinds": dict(sorted(self.kinds.items()))}


def request_kind(head):
    """`DynamoDB_20120810.Query`, or `PUT packages` for an S3 PUT under `BUCKET/packages/`."""
    lines = head.split(b"\r\n")
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-amz-target":
            return value.strip().decode("ascii", "replace")[:80]
    method, _, rest = lines[0].partition(b" ")
    path = rest.split(b" ")[0].split(b"?")[0]
    segments = [s for s in path.split(b"/") if s]
    key = segments[1].decode("ascii", "replace")[:40] if len(segments) > 1 else ""
    return f"{method.decode('ascii', 'replace')} {key}".strip()


async def pipe_requests(reader, writer, stats, delay, pending):
    """Client to server: a chunk that starts a request waits `delay` first."""
    while chunk := await reader.read(CHUNK):
        if chunk.startswith(METHODS):
            stats.started(chunk[:4096])
            pending.append(True)
            await asyncio.sleep(delay)
        writer.write(chunk)
        await writer.drain()
    writer.close()


async def pipe_answers(reader, writer, stats, pending):
    """Server to client: a chunk that starts an answer ends one request's flight."""
    while chunk := await reader.read(CHUNK):
        if chunk.startswith(b"HTTP/") and pending:
            pending.pop()
            stats.answered()
        writer.write(chunk)
        await writer.drain()
    writer.close()


async def main(listen, target, delay_ms, stats_file):
    stats = Stats(delay_ms)
    slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def handle(client_reader, client_writer):
        async with slots:
            try:
                server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
            except OSError:
                client_writer.close()
                return
            pending = []
            try:
                await asyncio.gather(
                    pipe_requests(client_reader, server_writer, stats, delay_ms / 1000, pending),
                    pipe_answers(server_reader, client_writer, stats, pending),
                    return_exceptions=True,
                )
            except asyncio.CancelledError:  # the proxy is stopping: open connections end
                pass

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, stats.restart)
    async with server:
        await stop.wait()
    with open(stats_file, "w", encoding="utf-8") as out:
        json.dump(stats.as_json(), out)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))
