#!/usr/bin/env python3
"""`serve`'s cold start, process start -> the first signed push answered,
side by side with Probot (or any other build of `astrolift`), rounds alternating.

    bench/serve_cold_start.py RUNS NAME=KIND:PATH [NAME=KIND:PATH ...]

KIND is `astrolift` (PATH: the binary) or `probot` (PATH: a directory holding
`node_modules/probot`, e.g. after `npm install probot@14.3.2` there). Each run:
- a fresh copy of a migrated SQLite state (as a restarted deployment has) and an
  empty blob directory for `astrolift`; Probot keeps no state;
- spawn, wait for the "listening" line on stdout (no polling), POST one `push`
  delivery signed with the webhook secret, with a fresh delivery id;
- wall time from spawn to the response's last byte, the process's own peak RSS
  (VmHWM of /proc/PID/status, read after the answer, before the process exits),
  and its CPU (user + system ticks) up to the answer.
Prints one Markdown row per build: medians, min and max; and the raw runs as JSON on
stderr. No GitHub is reachable (GITHUB_API_URL points at a closed port): the push
is answered before any sync starts, as it is on a real start.
"""
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from load_requests import EVENTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET = "serve-cold-start-secret"
APP_ID = "12345"
KEY_FILE = os.path.join(ROOT, "tests/fake-github/keys/test-app-private-key.pem")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# The `push` of bench/load.sh: a repository no registration covers, so the answer is 202
# and the queued sync never needs a registered repository.
PUSH = EVENTS["push"]

PROBOT_APP = "module.exports = (app) => { app.on('push', async () => {}); };\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def post_push(url: str, run: int) -> int:
    body = json.dumps(PUSH).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(url, data=body, method="POST")
    for name, value in {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": f"cold-{os.getpid()}-{time.time_ns()}-{run}",
        "X-Hub-Signature-256": f"sha256={signature}",
        "User-Agent": "GitHub-Hookshot/bench",
    }.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def own_usage(pid: int) -> tuple[int, float]:
    """(VmHWM in KiB, user + system CPU in ms) of the process itself."""
    with open(f"/proc/{pid}/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    cpu_ms = (int(fields[11]) + int(fields[12])) * 1000 / CLOCK_TICKS
    return peak, cpu_ms


def astrolift_command(binary: str, work: str, template: str, port: int):
    state = os.path.join(work, "state.db")
    shutil.copy(template, state)
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    env.update(
        GITHUB_WEBHOOK_SECRET=SECRET,
        GITHUB_APP_ID=APP_ID,
        GITHUB_APP_PRIVATE_KEY=open(KEY_FILE).read(),
        GITHUB_API_URL="http://127.0.0.1:9",
        ASTROLIFT_LOG_LEVEL="warn",
    )
    command = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--state", f"sqlite:{state}",
               "--blobs", f"file:{os.path.join(work, 'blobs')}"]
    return command, env, "listening on", f"http://127.0.0.1:{port}/github/webhook"


def probot_command(directory: str, work: str, _template: str, port: int):
    app = os.path.join(work, "app.cjs")
    with open(app, "w") as handle:
        handle.write(PROBOT_APP)
    env = dict(os.environ)
    env.update(
        APP_ID=APP_ID,
        PRIVATE_KEY=open(KEY_FILE).read(),
        WEBHOOK_SECRET=SECRET,
        PORT=str(port),
        HOST="127.0.0.1",
        LOG_LEVEL="info",
        GHE_HOST="",
        NODE_ENV="production",
    )
    env.pop("GHE_HOST")
    probot = os.path.join(directory, "node_modules/probot/bin/probot.js")
    command = ["node", probot, "run", app]
    return command, env, "Listening on", f"http://127.0.0.1:{port}/api/github/webhooks"


def one_run(kind: str, path: str, template: str, run: int) -> dict:
    work = tempfile.mkdtemp(prefix="serve-cold-")
    port = free_port()
    build = astrolift_command if kind == "astrolift" else probot_command
    command, env, ready, url = build(path, work, template, port)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if ready in line:
                break
        else:
            raise RuntimeError(f"{kind} exited before listening:\n{''.join(lines)}")
        status = post_push(url, run)
        answered = time.perf_counter()
        peak_kib, cpu_ms = own_usage(process.pid)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        shutil.rmtree(work, ignore_errors=True)
    return {"status": status, "ms": (answered - started) * 1000, "peak_mib": peak_kib / 1024,
            "cpu_ms": cpu_ms}


def migrated_state(builds: list) -> str:
    """A state store migrated by the first astrolift build (`agents list` opens it)."""
    path = os.path.join(tempfile.mkdtemp(prefix="serve-cold-state-"), "state.db")
    binary = next((p for _, k, p in builds if k == "astrolift"), None)
    if binary:
        subprocess.run([binary, "agents", "list", "--state", f"sqlite:{path}"],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def main() -> None:
    runs = int(sys.argv[1])
    builds = []
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        kind, path = rest.split(":", 1)
        builds.append((name, kind, path))
    template = migrated_state(builds)
    results = {name: [] for name, _, _ in builds}
    for run in range(runs):
        for name, kind, path in builds:
            results[name].append(one_run(kind, path, template, run))
    print(json.dumps(results), file=sys.stderr)
    print(f"{runs} runs each, rounds alternating; load {os.getloadavg()[0]:.2f}")
    print("| build | statuses | median ms (min–max) | median peak RSS MiB | median CPU ms |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, samples in results.items():
        ms = [s["ms"] for s in samples]
        statuses = ",".join(sorted({str(s["status"]) for s in samples}))
        print(f"| {name} | {statuses} | {statistics.median(ms):.1f} ({min(ms):.1f}–{max(ms):.1f}) | "
              f"{statistics.median(s['peak_mib'] for s in samples):.1f} | "
              f"{statistics.median(s['cpu_ms'] for s in samples):.0f} |")


if __name__ == "__main__":
    main()
