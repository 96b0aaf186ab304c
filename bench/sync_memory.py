#!/usr/bin/env python3
"""One SQS event through the sync function: its wall time and its peak memory.

    bench/sync_memory.py --binary target/release/sync --event EVENT.json [--timeout 900]

Serves EVENT (an SQS event) once through bench/cold_start.py's fake Lambda Runtime API, spawns
the binary with the function's configuration from this process's environment, waits for its
/response, and prints one JSON line: seconds from spawn to the response, the response, and the
process's peak resident memory (its own maximum RSS, from wait4 once it exits on the next
/next, which is answered 410).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cold_start import RuntimeApi, lambda_env, start_server  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--event", required=True)
    parser.add_argument("--timeout", type=int, default=900, help="the function's (template: 900)")
    parser.add_argument("--memory-mb", default="256")
    args = parser.parse_args()
    with open(args.event, encoding="utf-8") as file:
        api = RuntimeApi(json.load(file))
    api.deadline_ms = args.timeout * 1000
    server = start_server(api, 0)
    env = lambda_env(server.server_address[1])
    env["AWS_LAMBDA_FUNCTION_NAME"] = "astrolift-sync"
    env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = args.memory_mb
    start = time.perf_counter_ns()
    stderr = open(os.environ.get("SYNC_MEMORY_STDERR", os.devnull), "ab")
    process = subprocess.Popen([args.binary], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    if not api.responded.wait(timeout=args.timeout):
        process.kill()
        sys.exit(f"{args.binary}: no response within {args.timeout} s")
    answered, body = api.responses[-1]
    _, _, usage = os.wait4(process.pid, 0)
    print(json.dumps({
        "seconds": round((answered - start) / 1e9, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "response": json.loads(body),
    }))


if __name__ == "__main__":
    main()
