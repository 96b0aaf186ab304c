#!/usr/bin/env python3
"""Helpers of bench/load.sh.

  load_requests.py SECRET WORKDIR
      writes WORKDIR/{ping,star,push}.lua: wrk scripts that POST one fixed,
      correctly signed GitHub delivery (X-Hub-Signature-256 over the body).
  load_requests.py --summarize CASE CONNECTIONS WRK_OUTPUT
      prints one Markdown row from wrk --latency output.
"""

import hashlib
import hmac
import json
import re
import sys

REPOSITORY = {
    "id": 90001,
    "full_name": "octo/unregistered",
    "name": "unregistered",
    "default_branch": "main",
    "fork": False,
    "private": True,
    "owner": {"login": "octo", "id": 1},
}
SHA = "abcdefabcdefabcdefabcdefabcdefabcdefabcd"

EVENTS = {
    "ping": {"zen": "Keep it logically awesome.", "hook_id": 1},
    "star": {"action": "created", "repository": REPOSITORY},
    "push": {
        "ref": "refs/heads/main",
        "before": "0" * 40,
        "after": SHA,
        "deleted": False,
        "forced": False,
        "created": False,
        "head_commit": {"id": SHA, "timestamp": "2026-11-29T10:00:00Z", "message": "m"},
        "repository": REPOSITORY,
        "installation": {"id": 77},
        "sender": {"login": "dev", "id": 5},
    },
}


def write_scripts(secret: str, workdir: str) -> None:
    for event, payload in EVENTS.items():
        body = json.dumps(payload, separators=(",", ":"))
        signature = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
        script = "\n".join(
            [
                'wrk.method = "POST"',
                f"wrk.body = [==[{body}]==]",
                'wrk.headers["Content-Type"] = "application/json"',
                f'wrk.headers["X-GitHub-Event"] = "{event}"',
                f'wrk.headers["X-GitHub-Delivery"] = "load-{event}-1"',
                f'wrk.headers["X-Hub-Signature-256"] = "sha256={signature}"',
                "",
            ]
        )
        with open(f"{workdir}/{event}.lua", "w", encoding="utf-8") as out:
            out.write(script)


def milliseconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def summarize(case: str, connections: str, path: str) -> None:
    text = open(path, encoding="utf-8").read()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)
    p50 = milliseconds(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
    p99 = milliseconds(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    socket = re.search(r"Socket errors:(.*)", text)
    print(
        f"| {case} | {connections} | {float(rate):,.0f} | {p50:.2f} | {p99:.2f} "
        f"| {non_2xx.group(1) if non_2xx else 0} | {socket.group(1).strip() if socket else 0} |"
    )


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        summarize(*sys.argv[2:5])
    else:
        write_scripts(sys.argv[1], sys.argv[2])
