#!/usr/bin/env python3
"""The instructions `serve`'s webhook route executes per accepted push,
with the in-memory lanes and with the durable queue, counted by callgrind, for
builds side by side. Instruction counts do not depend on what else the machine
runs, so they show what the wall-clock ratio of crates/bot/benches/durable_accept.rs
on a loaded 2-core machine cannot.

    bench/durable_instructions.py NAME=BENCH [NAME=BENCH ...]

BENCH is a build of that bench (`cargo bench -p astrolift-bot --bench durable_accept
--no-run`, the path cargo prints). Each build runs each mode once under
`valgrind --tool=callgrind`, over HTTP (`HTTP=1 ATTEMPT=outcome SECONDS=$SECONDS
ROUNDS=1`, default 6 seconds; `wrk` is a process of its own and is not traced), with
its state file in $TMPDIR (default /dev/shm). A mode's figure is the process's
instructions less the bench's own setup (the inclusive cost of `durable_accept::main`:
signing the bodies and writing wrk's script; the server runs on other threads) over
the requests it verified (calls of `verify_signature`); the store's thread
(`connection::serve`) is shown apart. Prints one Markdown row per build.

Needs valgrind (with its callgrind_annotate) and wrk (Debian: `apt-get install -y valgrind
wrk`). With KEEP_DUMPS=DIR, each dump is kept as DIR/NAME-MODE.callgrind.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def function_costs(dump: str) -> dict:
    """Inclusive instructions by function name, from callgrind_annotate."""
    report = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
        check=True, capture_output=True, text=True,
    ).stdout
    costs = {}
    for line in report.splitlines():
        found = re.match(r"\s*([\d,]+) \([^)]*\)\s+(?:\S*?:)?(.*?) \[", line)
        if found:
            name = found.group(2)
            costs[name] = costs.get(name, 0) + int(found.group(1).replace(",", ""))
    return costs


def total_of(dump: str) -> int:
    with open(dump) as lines:
        for line in lines:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"{dump}: no totals")


def calls_of(dump: str, pattern: str) -> int:
    """Calls of the functions whose name holds `pattern` (callgrind's compressed names)."""
    names, total, callee = {}, 0, None
    with open(dump) as lines:
        for line in lines:
            named = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.strip())
            if named:
                if named.group(2):
                    names[named.group(1)] = named.group(2)
                callee = names.get(named.group(1), "") if line.startswith("cfn=") else None
            elif line.startswith("calls=") and callee is not None:
                if pattern in callee:
                    total += int(line.split()[0][len("calls="):])
                callee = None
    return total


def cost_of(costs: dict, suffix: str) -> int:
    return sum(cost for name, cost in costs.items() if name.endswith(suffix))


def measure(bench: str, mode: str, work: str) -> tuple:
    dump = os.path.join(work, f"{mode}.callgrind")
    env = dict(os.environ, HTTP="1", MODE=mode, ATTEMPT="outcome", ROUNDS="1",
               SECONDS=os.environ.get("SECONDS", "6"),
               TMPDIR=os.environ.get("TMPDIR", "/dev/shm"))
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dump}", bench, "--bench"],
        check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    costs = function_costs(dump)
    requests = calls_of(dump, "verify_signature")
    if requests == 0:
        raise SystemExit(f"{bench} {mode}: no request verified")
    setup = cost_of(costs, "durable_accept::main")
    store = cost_of(costs, "sqlite::connection::serve")
    return dump, requests, (total_of(dump) - setup) / requests, store / requests


def main() -> None:
    builds = [arg.split("=", 1) for arg in sys.argv[1:]]
    if not builds or any(len(b) != 2 for b in builds):
        raise SystemExit(__doc__)
    missing = [tool for tool in ("valgrind", "callgrind_annotate", "wrk") if not shutil.which(tool)]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)} (apt-get install -y valgrind wrk)")
    for name, bench in builds:
        if not os.access(bench, os.X_OK):
            raise SystemExit(f"{name}: {bench} is not an executable bench build (see --help)")
    keep = os.environ.get("KEEP_DUMPS")
    print("| build | memory: instructions per request (store's thread) | durable | durable / memory |")
    print("| --- | ---: | ---: | ---: |")
    for name, bench in builds:
        with tempfile.TemporaryDirectory() as work:
            figures = {}
            for mode in ("memory", "durable"):
                dump, requests, per_request, store = measure(bench, mode, work)
                figures[mode] = (per_request, store, requests)
                if keep:
                    shutil.copy(dump, os.path.join(keep, f"{name}-{mode}.callgrind"))
        (memory, memory_store, _), (durable, durable_store, _) = figures["memory"], figures["durable"]
        print(f"| {name} | {memory:,.0f} ({memory_store:,.0f}) | {durable:,.0f} "
              f"({durable_store:,.0f}) | {durable / memory:.3f} |", flush=True)


if __name__ == "__main__":
    main()
