#!/usr/bin/env python3
"""Issue 26: writes crates/cli/start-order.txt, the functions `serve` runs from exec to
its first signed push answered, for the linker to lay out together (crates/cli/build.rs).

    bench/start_order.py BENCH_BINARY RELEASE_MAP [OUT]

BENCH_BINARY is `astrolift` built with the `cli-bench` profile (the `cli` profile with its
symbols, Cargo.toml): it runs under `valgrind --tool=callgrind` as bench/serve_cold_start.py starts it
(a migrated SQLite state, one signed push), and every function of the binary it enters
before the answer is listed. RELEASE_MAP is the linker's map of the build `astrolift` is
installed with, the `cli` profile (`ASTROLIFT_LINK_MAP=FILE cargo build --profile cli -p
astrolift-cli --bin astrolift`): that profile strips the binary and hashes its symbols apart
from the `cli-bench` build's (Cargo's metadata covers `strip`), so each listed function is
written under the `cli` build's names whose path (the mangled name without its `17h…E`
hash) is the same. A path with several instances lists them all: ordering one more function
costs nothing.

    cargo build --profile cli-bench --locked -p astrolift-cli --bin astrolift
    cp target/cli-bench/astrolift /tmp/astrolift-bench
    ASTROLIFT_LINK_MAP=/tmp/astrolift.map cargo build --profile cli --locked -p astrolift-cli --bin astrolift
    python3 bench/start_order.py /tmp/astrolift-bench /tmp/astrolift.map

Regenerate it when the start's code moved (BENCHMARKS.md, issue 26: `serve`'s peak at
its first answer with bench/serve_cold_start.py): names it lists that a build no longer
defines are skipped by the linker.
"""
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_cold_start as cold  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HASH = re.compile(r"17h[0-9a-f]{16}E$")
TEXT_SECTION = re.compile(r":\(\.text\.(\S+)\)$")
CALLGRIND_NAME = re.compile(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")


def executed_functions(binary: str) -> list:
    """The binary's functions callgrind sees `serve` enter up to its first answer, in the
    order its dump first names them."""
    template = cold.migrated_state([("bench", "astrolift", binary)])
    work = tempfile.mkdtemp(prefix="start-order-")
    try:
        port = cold.free_port()
        command, env, ready, url = cold.astrolift_command(binary, work, template, port)
        dump = os.path.join(work, "start.callgrind")
        command = ["valgrind", "--tool=callgrind", "--demangle=no",
                   f"--callgrind-out-file={dump}"] + command
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        try:
            for line in process.stdout:
                if ready in line:
                    break
            else:
                raise RuntimeError("serve exited before listening")
            status = cold.post_push(url, 0)
            if status != 202:
                raise RuntimeError(f"the push was answered {status}")
            subprocess.run(["callgrind_control", "-d", str(process.pid)], check=True,
                           capture_output=True)
            time.sleep(1)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        return read_dumps(work, os.path.realpath(binary))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_dumps(work: str, binary: str) -> list:
    objects, names, order, seen = {}, {}, [], set()
    current = None
    for path in sorted(p for p in os.listdir(work) if p.startswith("start.callgrind")):
        with open(os.path.join(work, path), errors="replace") as dump:
            for line in dump:
                match = CALLGRIND_NAME.match(line.rstrip("\n"))
                if not match:
                    continue
                kind, ident, name = match.groups()
                table = objects if kind.endswith("ob") else names
                if name:
                    table[ident] = name
                if kind == "ob":
                    current = objects.get(ident)
                elif kind == "fn" and current and os.path.realpath(current) == binary:
                    # callgrind names a recursive call's level with a `'N` suffix
                    symbol = re.sub(r"'\d+$", "", names.get(ident, ""))
                    if symbol and symbol not in seen:
                        seen.add(symbol)
                        order.append(symbol)
    return order


def release_symbols(map_path: str) -> dict:
    """The release build's functions by path (a mangled name without its hash), from the
    linker's map: each function is an input section of its own, `.text.NAME` (the map
    lists a stripped build's local symbols only by their sections)."""
    by_path = {}
    with open(map_path, errors="replace") as linker_map:
        for line in linker_map:
            match = TEXT_SECTION.search(line)
            if match:
                name = match.group(1)
                by_path.setdefault(HASH.sub("", name), []).append(name)
    return by_path


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    binary, map_path = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) == 4 else os.path.join(ROOT, "crates/cli/start-order.txt")
    executed = executed_functions(binary)
    by_path = release_symbols(map_path)
    listed, taken, missing = [], set(), 0
    for symbol in executed:
        names = by_path.get(HASH.sub("", symbol))
        if not names:
            missing += 1
            continue
        for name in names:
            if name not in taken:
                taken.add(name)
                listed.append(name)
    with open(out, "w") as handle:
        handle.write("".join(f"{name}\n" for name in listed))
    print(f"{len(executed)} functions run at start, {len(listed)} release symbols listed, "
          f"{missing} not found in the release map", file=sys.stderr)


if __name__ == "__main__":
    main()
