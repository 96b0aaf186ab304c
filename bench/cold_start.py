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

Each run also records the process's own CPU (user + system, from wait4 once it exits).

--count-aws puts a recording HTTP proxy between the binary and $AWS_ENDPOINT_URL (moto):
each AWS call's operation (X-Amz-Target, or the Query protocol's Action) and its start and
end times are kept, and the run reports the AWS round trips it waited for one after another
before answering: the longest chain of calls, each starting after the previous one ended
(the greatest number of non-overlapping calls, found by earliest end).

Everything else the binary needs (secret, stores, queue URL) comes from this process's environment.
"""

import argparse
import http.client
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
        # When the process first asked for an event: the end of its init.
        self.first_next = None
        # The invocation's deadline, from when it is served (a function's timeout).
        self.deadline_ms = 30000

    def next_event(self):
        with self.lock:
            if self.first_next is None:
                self.first_next = time.perf_counter_ns()
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
            deadline = str(int(time.time() * 1000) + api.deadline_ms)
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


class AwsRecorder:
    """A forwarding proxy to moto that records each call: (start ns, end ns, operation)."""

    def __init__(self, upstream):
        self.upstream = upstream.split("://", 1)[1].rstrip("/")
        self.lock = threading.Lock()
        self.calls = []

    def take(self):
        with self.lock:
            calls, self.calls = self.calls, []
        return calls

    def handler(self):
        recorder = self

        class Proxy(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                start = time.perf_counter_ns()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                operation = self.headers.get("X-Amz-Target") or ""
                if not operation and b"Action=" in body:
                    operation = body.split(b"Action=", 1)[1].split(b"&", 1)[0].decode()
                upstream = http.client.HTTPConnection(recorder.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = recorder.upstream
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()
                with recorder.lock:
                    recorder.calls.append((start, time.perf_counter_ns(), operation or self.path))

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = forward

        return Proxy


def sequential_calls(calls, before):
    """The longest chain of calls ended by `before`, each starting after the previous ended."""
    chain, last_end = [], 0
    for start, end, operation in sorted((c for c in calls if c[1] <= before), key=lambda c: c[1]):
        if start >= last_end:
            chain.append(operation)
            last_end = end
    return chain


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
    # Lambda sets no RUST_BACKTRACE. With it set (these machines export RUST_BACKTRACE=1),
    # the runtime's exit on the 410 prints a symbolized backtrace that costs more CPU than
    # the whole cold start (bench/cold_start_stack.sh), and that is not what a function pays.
    for name in ("RUST_BACKTRACE", "RUST_LIB_BACKTRACE"):
        env.pop(name, None)
    return env


def time_first_event(api, binary, env, recorder=None):
    """(ms from spawn to the /response of the first event, ms of the process's own CPU,
    the AWS calls it waited for one after another before answering, ms from spawn to its
    first /next: its init); checks the answer."""
    api.responded.clear()
    api.first_next = None
    if recorder:
        recorder.take()
    start = time.perf_counter_ns()
    # COLD_START_STDERR=PATH keeps the binary's stderr (appended), to see what it says at exit.
    stderr_path = os.environ.get("COLD_START_STDERR")
    stderr = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
    process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    if stderr_path:
        stderr.close()
    if not api.responded.wait(timeout=10):
        process.kill()
        raise SystemExit(f"{binary}: no response within 10 s")
    answered, body = api.responses[-1]
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    status = json.loads(body).get("statusCode")
    if status != 202:
        raise SystemExit(f"{binary}: answered {status}, expected 202: {body[:500]!r}")
    chain = sequential_calls(recorder.take(), answered) if recorder else []
    init = (api.first_next - start) / 1e6
    return (answered - start) / 1e6, (usage.ru_utime + usage.ru_stime) * 1000, chain, init


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
    parser.add_argument("--count-aws", action="store_true",
                        help="record the AWS calls through a proxy to $AWS_ENDPOINT_URL")
    args = parser.parse_args()
    with open(args.event) as file:
        api = RuntimeApi(json.load(file))
    server = start_server(api, args.port)
    port = server.server_address[1]
    if args.serve:
        print(port, flush=True)
        threading.Event().wait()
    env = lambda_env(port)
    recorder = None
    if args.count_aws:
        recorder = AwsRecorder(os.environ["AWS_ENDPOINT_URL"])
        proxy = ThreadingHTTPServer(("127.0.0.1", 0), recorder.handler())
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{proxy.server_address[1]}"
    for _ in range(args.warmup):
        time_first_event(api, args.binary, env, recorder)
    runs = [time_first_event(api, args.binary, env, recorder) for _ in range(args.runs)]
    samples = [wall for wall, _, _, _ in runs]
    cpu = [cpu for _, cpu, _, _ in runs]
    init = [init for _, _, _, init in runs]
    baseline = [time_exit(args.baseline) for _ in range(args.runs)]
    print(summary(f"{args.binary}: spawn -> first /next (init)", init))
    print(summary(f"{args.binary}: spawn -> first event answered (202)", samples))
    print(summary("the process's own CPU (user + system, whole life)", cpu))
    print(summary(f"{args.baseline}: spawn -> exit (baseline)", baseline))
    print(f"ratio of medians: {statistics.median(samples) / statistics.median(baseline):.1f}x")
    if recorder:
        chains = [chain for _, _, chain, _ in runs]
        lengths = sorted(len(chain) for chain in chains)
        print(f"AWS round trips one after another before the answer: median "
              f"{statistics.median(lengths)}, max {lengths[-1]} ({len(lengths)} runs)")
        print("  longest run: " + " -> ".join(max(chains, key=len)))


if __name__ == "__main__":
    main()
