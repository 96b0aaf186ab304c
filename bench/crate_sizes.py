#!/usr/bin/env python3
"""What a binary links, crate by crate: the `cargo bloat --crates` figure read from an
already built, unstripped binary (cargo bloat itself builds, and a build of the four
binaries together unifies features; bench/binary_sizes.sh builds each alone first).

    bench/crate_sizes.py BINARY [TOP]

Sums the sizes of the text symbols (`nm -S -C`) by the first path segment of their
demangled name: generic code is counted where it is defined (`core`, `alloc`, the
instantiated crate), as cargo bloat counts it; symbols of C code (SQLite, aws-lc) and
symbols without a Rust path are `[C/other]`, and `?` a Rust name without a crate prefix.
"""
import collections
import re
import subprocess
import sys

out = subprocess.run(["nm", "-S", "--size-sort", "-C", sys.argv[1]], capture_output=True, text=True).stdout
sizes = collections.Counter(); total = 0
for line in out.splitlines():
    parts = line.split(" ", 3)
    if len(parts) < 4 or parts[2] not in "tTwW": continue
    size = int(parts[1], 16); name = parts[3]; total += size
    name = re.sub(r"^<", "", name)
    name = re.sub(r"^(_<|<)", "", name)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    key = m.group(1) if m else ("[C/other]" if "::" not in name else "?")
    sizes[key] += size
print(f"total text symbols: {total/1e6:.1f} MB")
for k, v in sizes.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 30):
    print(f"{v/1e6:7.2f} MB  {k}")
