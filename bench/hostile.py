#!/usr/bin/env python3
"""Hostile inputs, two `astrolift` builds side by side.

    python3 bench/hostile.py OLD_ASTROLIFT NEW_ASTROLIFT [RUNS]

Generates the inputs of crates/cli/tests/it/hostile.rs (131,000 `needs` on one line, 5,000
same-titled Langflow agents, an archive of 80,000 empty files with 4,000-byte paths, an
export of 8,000,000 one-character strings), runs each build on each input RUNS times
(default 5), alternating, and prints the median wall and user CPU times and the peak
resident memory, all from GNU time (`/usr/bin/time`, whose own small RSS is what the child
starts from: wait4 from this script would report this script's RSS at fork). Imports write
under /dev/shm when it exists, so the figures are the work and not the disk (10,002 files
of the 5,000-agent layout cost seconds of mkdir and open on this machine's ext4). A run is
cut at 120 s.
"""
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

LIMIT_S = 120


def short_name(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    name = "n"
    while True:
        name += digits[n % 36]
        n //= 36
        if n == 0:
            return name


def inputs(root):
    os.makedirs(f"{root}/needs/workflows")
    needs = ",".join(f'"{short_name(n)}"' for n in range(131_000))
    with open(f"{root}/needs/workflows/wide.toml", "w") as f:
        f.write(f'schema = "astrolift.workflow/v1"\nname = "wide"\n\n[[stages]]\nname = "s"\n'
                f'agent = "a"\nneeds = [{needs}]\n')
    nodes = [{"id": f"Agent-{i}", "data": {"id": f"Agent-{i}", "type": "Agent", "node": {
        "display_name": "Helper", "template": {"system_prompt": {"value": "You help."}}}}}
        for i in range(5_000)]
    with open(f"{root}/agents.json", "w") as f:
        json.dump({"name": "many", "data": {"nodes": nodes, "edges": []}}, f)
    stem = "d" * 200
    with gzip.open(f"{root}/paths.tar.gz", "wb", compresslevel=1) as raw:
        with tarfile.open(fileobj=raw, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for i in range(80_000):
                name = ""
                while len(name) + len(stem) + 1 < 4_000 - 12:
                    name += stem + "/"
                name += str(i).rjust(4_000 - len(name), "0")
                info = tarfile.TarInfo(name)
                tar.addfile(info, io.BytesIO(b""))
    with open(f"{root}/values.json", "w") as f:
        f.write('{"data":{"nodes":[],"edges":[]},"padding":["a"' + ',"a"' * 7_999_999 + "]}")
    return {
        "validate, 131,000 needs": lambda out: ["validate", f"{root}/needs", "--format", "json"],
        "import, 5,000 same-titled agents": lambda out: [
            "import", "--from", "langflow", f"{root}/agents.json", "--out", out],
        "import, 80,000 paths of 4,000 bytes": lambda out: [
            "import", "--from", "astrolift_package", f"{root}/paths.tar.gz", "--out", out],
        "import, 8,000,000 one-character strings": lambda out: [
            "import", "--from", "langflow", f"{root}/values.json", "--out", out],
    }


def run(binary, args):
    """Wall seconds (None past the limit), user CPU seconds, peak RSS in MiB, exit code."""
    with tempfile.NamedTemporaryFile("r") as report:
        command = ["/usr/bin/time", "-q", "-f", "%e %U %M", "-o", report.name, binary, *args]
        try:
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            return None, None, None, "killed"
        wall, user, peak_kib = report.read().split()[-3:]
        return float(wall), float(user), int(peak_kib) / 1024, done.returncode


def main():
    old, new = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory() as root:
        cases = inputs(root)
        print("| input | old median (user CPU) | new median (user CPU) | new/old | old peak | new peak | exit old/new |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, args_of in cases.items():
            figures = {old: [], new: []}
            for _ in range(runs):
                for binary in (old, new):
                    out = tempfile.mkdtemp(dir=scratch)
                    figures[binary].append(run(binary, args_of(f"{out}/out")))
                    subprocess.run(["rm", "-rf", out], check=True)
                if figures[old][-1][0] is None:
                    break  # the old build hit the limit: one run says it

            def median(binary, column):
                values = [f[column] for f in figures[binary]]
                return None if None in values else statistics.median(values)

            def show(binary):
                wall, user = median(binary, 0), median(binary, 1)
                return f"> {LIMIT_S} s" if wall is None else f"{wall:.3f} s ({user:.2f} s)"

            def peak(binary):
                peaks = [f[2] for f in figures[binary] if f[2] is not None]
                return f"{max(peaks):.0f} MiB" if peaks else "–"

            m_old, m_new = median(old, 0), median(new, 0)
            ratio = "–" if m_old is None or m_new is None else f"{m_new / m_old:.3f}"
            codes = f"{figures[old][-1][3]}/{figures[new][-1][3]}"
            print(f"| {name} | {show(old)} | {show(new)} | {ratio} | {peak(old)} | {peak(new)} | {codes} |",
                  flush=True)


if __name__ == "__main__":
    main()
