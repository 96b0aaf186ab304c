#!/usr/bin/env python3
"""Cold start of a Lambda binary: process start -> first event handled.

    bench/cold_start.py --binary target/release/webhook --event events/webhook-push.json \
        --runs 30 [--baseline /bin/true] [--serve PORT]

A fake Lambda Runtime API (the three routes a runtime uses, in memory) runs in this process on
127.0.0.1. Each run spawns the binary with AWS_LAMBDA_RUNTIME_API pointing at it, serves it the
event at GET /2018-06-01/runtime/invocation/next (with a fresh X-GitHub-Delivery, so that every
run queues a job instead of hitting the dedupe), and takes the time when the binary POSTs the
invocation's /response. The next GET /next is answered 410, which ends the process (the runtime
stops on a /next it cannot use). The figure is spawn -> /response received.

The baseline is spawn -> exit of --baseline (default /bin/true): what starting any process costs
here.

--serve PORT only runs the fake API (for hyperfine): each process gets one event, then 410.

Everything else the binary needs (secret, stores, queue URL) comes from this process's environment.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime/invocation/"


class RuntimeApi:
    """One event per process: served on the first /next, 410 on the second."""

    def __init__(self, event):
        self.event = event
        self.lock = threading.Lock()
        self.served = False
        self.responses = []  # (perf_counter_ns, body)
        self.responded = threading.Event()

    def next_event(self):
        with self.lock:
            if self.served:
                self.served = False
                return None
            self.served = True
        event = json.loads(json.dumps(self.event))
        if "x-github-delivery" in event.get("headers", {}):
            event["headers"]["x-github-delivery"] = str(uuid.uuid4())
        return json.dumps(event).encode()

    def record(self, body):
        self.responses.append((time.perf_counter_ns(), body))
        self.responded.set()


def handler_for(api):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path != PREFIX + "next":
                return self.reply(404)
            body = api.next_event()
            if body is None:
                return self.reply(410, b'{"errorMessage":"benchmark over"}')
            deadline = str(int(time.time() * 1000) + 30000)
            self.reply(200, body, [
                ("Content-Type", "application/json"),
                ("Lambda-Runtime-Aws-Request-Id", str(uuid.uuid4())),
                ("Lambda-Runtime-Deadline-Ms", deadline),
                ("Lambda-Runtime-Invoked-Function-Arn",
                 "arn:aws:lambda:us-east-1:123456789012:function:astrolift-webhook"),
                ("Lambda-Runtime-Trace-Id", "Root=1-6a2b3c4d-5e6f7a8b9c0d1e2f3a4b5c6d;Sampled=0"),
            ])

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path.startswith(PREFIX) and self.path.endswith("/response"):
                api.record(body)
            else:
                sys.stderr.write(f"{self.path}: {body[:500]!r}\n")
            self.reply(202, b'{"status":"OK"}')

    return Handler


def start_server(api, port):
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(api))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def lambda_env(port):
    env = dict(os.environ)
    env.update({
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": "astrolift-webhook",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/astrolift-webhook",
    })
    return env


def time_first_event(api, binary, env):
    """ms from spawn to the /response of the first event; checks the answer."""
    api.responded.clear()
    start = time.perf_counter_ns()
    process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not api.responded.wait(timeout=10):
        process.kill()
        raise SystemExit(f"{binary}: no response within 10 s: {process.communicate()[1][-2000:]!r}")
    answered, body = api.responses[-1]
    stderr = process.communicate(timeout=10)[1]
    status = json.loads(body).get("statusCode")
    if status != 202:
        raise SystemExit(f"{binary}: answered {status}, expected 202: {body[:500]!r} {stderr[-2000:]!r}")
    return (answered - start) / 1e6


def time_exit(command):
    start = time.perf_counter_ns()
    subprocess.run([command], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter_ns() - start) / 1e6


def summary(name, samples):
    return (f"{name}: median {statistics.median(samples):.2f} ms, min {min(samples):.2f} ms, "
            f"max {max(samples):.2f} ms ({len(samples)} runs)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary")
    parser.add_argument("--event", required=True)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--baseline", default="/bin/true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help="only run the fake API on --port")
    args = parser.parse_args()
    with open(args.event) as file:
        api = RuntimeApi(json.load(file))
    server = start_server(api, args.port)
    port = server.server_address[1]
    if args.serve:
        print(port, flush=True)
        threading.Event().wait()
    env = lambda_env(port)
    for _ in range(args.warmup):
        time_first_event(api, args.binary, env)
    samples = [time_first_event(api, args.binary, env) for _ in range(args.runs)]
    baseline = [time_exit(args.baseline) for _ in range(args.runs)]
    print(summary(f"{args.binary}: spawn -> first event answered (202)", samples))
    print(summary(f"{args.baseline}: spawn -> exit (baseline)", baseline))
    print(f"ratio of medians: {statistics.median(samples) / statistics.median(baseline):.1f}x")


if __name__ == "__main__":
    main()
