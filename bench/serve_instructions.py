#!/usr/bin/env python3
"""The instructions `serve` executes per accepted webhook, counted by
callgrind, for builds side by side. Instruction counts do not depend on what
else the machine runs, so they settle what a throughput figure on a loaded
2-core machine cannot.

    bench/serve_instructions.py REQUESTS CASE NAME=PATH [NAME=PATH ...]

CASE is an event of bench/load_requests.py (`issues` repeats one delivery id:
verify, parse, the keyed read of the repository's bindings, the trust policy,
the jq mapping in a worker process, the dispatch's duplicate insert; `push`
repeats one delivery id too: verify, parse, the delivery's conditional insert).
Each build gets the state bench/load.sh prepares (the example monorepo
registered under project `local`), starts under `valgrind --tool=callgrind`,
answers 20 warm-up requests, has its counters zeroed (`callgrind_control -z`),
answers REQUESTS more over one keep-alive connection, and is dumped
(`callgrind_control -d`). Prints one Markdown row per build: instructions per
request in `serve`'s own process. The jq worker processes are not traced
(valgrind cannot run under the address-space limit the pool sets on them);
bench/load.sh's CPU µs/request column includes them.

With KEEP_DUMPS=DIR, each build's dump is copied to DIR/NAME.callgrind, for
`callgrind_annotate --inclusive=yes DIR/NAME.callgrind` (where the instructions go).
"""
import glob
import hashlib
import hmac
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from load_requests import EVENTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET = "serve-instructions-secret"
KEY_FILE = os.path.join(ROOT, "tests/fake-github/keys/test-app-private-key.pem")
WARM_UP = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(binary: str, work: str) -> None:
    state = f"sqlite:{work}/state.db"
    blobs = f"file:{work}/blobs"
    run = lambda *args: subprocess.run(  # noqa: E731
        [binary, *args, "--state", state], check=True, capture_output=True
    )
    run("env-spec", "upsert", "triage-prod", "--project-id", "local", "--agent-type",
        "claude", "--runtime", "claude-code", "--config-repo", "local/monorepo",
        "--manifest-path", "config/triage/config.toml")
    run("check", "--apply", os.path.join(ROOT, "examples/monorepo"), "--blobs", blobs)


def post(connection: http.client.HTTPConnection, case: str, body: bytes) -> int:
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    connection.request("POST", "/github/webhook", body=body, headers={
        "Content-Type": "application/json",
        "X-GitHub-Event": case,
        "X-GitHub-Delivery": f"instructions-{case}-1",
        "X-Hub-Signature-256": f"sha256={signature}",
    })
    answer = connection.getresponse()
    answer.read()
    return answer.status


def wait_healthy(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("serve did not answer /healthz under valgrind")


def dumped_instructions(work: str, pid: int) -> int:
    # callgrind_control -d writes <out>.<pid>.<n>; the dump holds the counts since -z.
    for _ in range(100):
        dumps = sorted(glob.glob(f"{work}/callgrind.out.{pid}.*"))
        for path in dumps:
            text = open(path, encoding="utf-8", errors="replace").read()
            found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
            if found:
                return int(found.group(1))
        time.sleep(0.2)
    raise SystemExit("no callgrind dump appeared")


def keep_dump(work: str, pid: int, name: str) -> None:
    keep = os.environ.get("KEEP_DUMPS")
    if not keep:
        return
    os.makedirs(keep, exist_ok=True)
    for path in sorted(glob.glob(f"{work}/callgrind.out.{pid}.*"))[:1]:
        shutil.copy(path, os.path.join(keep, f"{name}.callgrind"))


def measure(binary: str, case: str, requests: int, name: str = "build") -> int:
    work = tempfile.mkdtemp(prefix="astrolift-instructions-")
    try:
        prepare(binary, work)
        port = free_port()
        env = dict(os.environ, GITHUB_API_URL="http://127.0.0.1:9", GITHUB_APP_ID="12345",
                   GITHUB_APP_PRIVATE_KEY=open(KEY_FILE, encoding="utf-8").read(),
                   GITHUB_WEBHOOK_SECRET=SECRET, ASTROLIFT_LOG_LEVEL="info")
        env.pop("RUST_BACKTRACE", None)
        serve = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work}/callgrind.out.%p",
             binary, "serve", "--listen", f"127.0.0.1:{port}",
             "--state", f"sqlite:{work}/state.db", "--blobs", f"file:{work}/blobs"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/serve.log", "w"),
        )
        try:
            wait_healthy(port, time.monotonic() + 120)
            body = json.dumps(EVENTS[case], separators=(",", ":")).encode()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            statuses = [post(connection, case, body) for _ in range(WARM_UP)]
            subprocess.run(["callgrind_control", "-z", str(serve.pid)], check=True,
                           capture_output=True)
            statuses += [post(connection, case, body) for _ in range(requests)]
            subprocess.run(["callgrind_control", "-d", str(serve.pid)], check=True,
                           capture_output=True)
            if any(status >= 300 for status in statuses):
                raise SystemExit(f"{binary}: answers {sorted(set(statuses))}")
            total = dumped_instructions(work, serve.pid)
            keep_dump(work, serve.pid, name)
            return total
        finally:
            serve.terminate()
            serve.wait(timeout=120)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    requests, case, builds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    print(f"| build | {case}: instructions per request (serve's process, {requests} requests) |")
    print("| --- | ---: |")
    for build in builds:
        name, binary = build.split("=", 1)
        total = measure(binary, case, requests, name)
        print(f"| {name} | {total / requests:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
