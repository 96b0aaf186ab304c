#!/usr/bin/env python3
"""The median table of bench/push_latency.sh's runs.

Usage: bench/push_table.py RUNS_JSONL

One row per case (agents, injected delay, new or unchanged push) and build: the median
seconds from the POST to the completed check run, the median AWS requests and most in
flight, and, for a delay case, the round trips in a row: (median seconds at this delay
minus median seconds at 0 ms) / delay, for the same build and agents.
"""

import json
import statistics
import sys
from collections import defaultdict


def main(path):
    groups = defaultdict(list)
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        groups[(row["agents"], row["delay_ms"], row["unchanged"], row["build"])].append(row)

    def median_seconds(rows):
        if any(r.get("seconds") is None for r in rows):
            return None
        return statistics.median(r["seconds"] for r in rows)

    print("| agents | delay | push | build | runs | POST → completed | AWS requests | most in flight | round trips in a row |")
    print("| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (agents, delay, unchanged, build), rows in sorted(groups.items()):
        seconds = median_seconds(rows)
        shown = f"{seconds:.2f} s" if seconds is not None else f"over {rows[0]['over_seconds']} s"
        requests = statistics.median(r.get("aws_requests", 0) for r in rows)
        in_flight = max(r.get("max_in_flight", 0) for r in rows)
        in_a_row = "—"
        base = groups.get((agents, 0.0, unchanged, build))
        if delay and base and seconds is not None and median_seconds(base) is not None:
            in_a_row = f"{(seconds - median_seconds(base)) / (delay / 1000):.0f}"
        kind = "unchanged" if unchanged else "new"
        print(f"| {agents} | {delay:g} ms | {kind} | {build} | {len(rows)} | {shown} | {requests:.0f} | {in_flight} | {in_a_row} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
