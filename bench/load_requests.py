#!/usr/bin/env python3
"""Helpers of bench/load.sh.

  load_requests.py SECRET WORKDIR
      writes WORKDIR/{ping,star,push,issues,issues-new}.lua: wrk scripts that
      POST one fixed, correctly signed GitHub delivery (X-Hub-Signature-256
      over the body). `issues` and `issues-new` are `issues.opened` on the
      registered example repository (`local/monorepo`, whose triage agent has
      a GitHub-sourced binding for it), so they run the trigger fan-out:
      `issues` repeats one delivery id (the dispatch is recorded once, every
      later request is a duplicate after the jq payload mapping);
      `issues-new` gives every request a fresh delivery id (the signature
      covers the body only), so every request records a new dispatch in the
      outbox.
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
# The repository `astrolift check --apply examples/monorepo` registers.
REGISTERED = {
    "id": 90002,
    "full_name": "local/monorepo",
    "name": "monorepo",
    "default_branch": "main",
    "fork": False,
    "private": True,
    "owner": {"login": "local", "id": 2},
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
    "issues": {
        "action": "opened",
        "issue": {
            "number": 7,
            "title": "Triage me",
            "user": {"login": "dev", "id": 5},
            "author_association": "OWNER",
        },
        "repository": REGISTERED,
        "installation": {"id": 77},
        "sender": {"login": "dev", "id": 5},
    },
}

# A fresh delivery id per request (wrk's `request` hook); the time prefix keeps
# ids of later runs apart from earlier ones.
FRESH_DELIVERY = """
local prefix = "load-issues-new-" .. os.time() .. "-"
local counter = 0
request = function()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] = prefix .. counter
  return wrk.format()
end
"""


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
        if event == "issues":
            with open(f"{workdir}/issues-new.lua", "w", encoding="utf-8") as out:
                out.write(script + FRESH_DELIVERY)


def milliseconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def summarize(case: str, connections: str, path: str, ticks: str = "", hz: str = "100") -> None:
    text = open(path, encoding="utf-8").read()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)
    p50 = milliseconds(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
    p99 = milliseconds(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    socket = re.search(r"Socket errors:(.*)", text)
    print(
        f"| {case} | {connections} | {float(rate):,.0f} | {p50:.2f} | {p99:.2f} "
        f"| {non_2xx.group(1) if non_2xx else 0} | {socket.group(1).strip() if socket else 0} "
        f"| {cpu_per_request(text, ticks, hz)} |"
    )


def cpu_per_request(wrk_output: str, ticks: str, hz: str) -> str:
    """serve's CPU time per answered request, in µs ("n/a" without a tick count)."""
    requests = re.search(r"(\d+) requests in", wrk_output)
    if not ticks or not requests or int(requests.group(1)) == 0:
        return "n/a"
    return f"{int(ticks) / int(hz) * 1e6 / int(requests.group(1)):.0f}"


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        summarize(*sys.argv[2:7])
    else:
        write_scripts(sys.argv[1], sys.argv[2])
