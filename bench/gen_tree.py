#!/usr/bin/env python3
"""Generate a deterministic tree of mixed files for the package benchmarks.

    gen_tree.py DIR --size-mib 200                 # one agent at the root
    gen_tree.py DIR --size-mib 1024 --agents 20    # monorepo: agents/<slug>/astrolift.toml

The mix, by bytes: ~45% source-like text (compresses ~4x), ~20% JSON/CSV
data (compresses ~6x), ~35% incompressible binary (images, archives).
File sizes: 90% small (1-32 KiB), 9.5% medium (64 KiB-1 MiB), 0.5% large
(4-16 MiB). Same seed, same bytes.
"""
import argparse
import os
import random

WORDS = (
    "fn let mut struct impl pub use self match return if else for while loop "
    "async await Result Option Some None Ok Err String Vec u64 usize bool true "
    "false error value path tree entry slice archive digest header config agent "
    "skill brief manifest package include exclude mount source dest size limit"
).split()


def text_corpus(rng, size):
    lines = []
    total = 0
    while total < size:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
        line += rng.choice([";", " {", "}", ",", ""]) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()


def data_corpus(rng, size):
    rows = []
    total = 0
    i = 0
    while total < size:
        row = '{"id":%d,"name":"%s","score":%d,"tags":["%s","%s"]}\n' % (
            i, rng.choice(WORDS), rng.randint(0, 1000), rng.choice(WORDS), rng.choice(WORDS))
        rows.append(row)
        total += len(row)
        i += 1
    return "".join(rows).encode()


def pick_size(rng):
    r = rng.random()
    if r < 0.90:
        return rng.randint(1024, 32 * 1024)
    if r < 0.995:
        return rng.randint(64 * 1024, 1024 * 1024)
    return rng.randint(4 * 1024 * 1024, 16 * 1024 * 1024)


def write_files(rng, root, budget, text, data):
    written = 0
    n = 0
    while written < budget:
        size = min(pick_size(rng), budget - written)
        kind = rng.random()
        sub = "d%02d/s%02d" % (rng.randint(0, 15), rng.randint(0, 15))
        os.makedirs(os.path.join(root, sub), exist_ok=True)
        if kind < 0.45:
            start = rng.randint(0, len(text) - 1)
            body = (text[start:] + text * (size // len(text) + 1))[:size]
            name = "f%06d.rs" % n
        elif kind < 0.65:
            start = rng.randint(0, len(data) - 1)
            body = (data[start:] + data * (size // len(data) + 1))[:size]
            name = "f%06d.json" % n
        else:
            body = rng.randbytes(size)
            name = "f%06d.bin" % n
        with open(os.path.join(root, sub, name), "wb") as f:
            f.write(body)
        written += size
        n += 1
    return n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--size-mib", type=int, default=200)
    p.add_argument("--agents", type=int, default=0)
    p.add_argument("--seed", type=int, default=4)
    a = p.parse_args()
    rng = random.Random(a.seed)
    text = text_corpus(rng, 4 << 20)
    data = data_corpus(rng, 4 << 20)
    budget = a.size_mib << 20
    os.makedirs(a.dir, exist_ok=True)
    if a.agents == 0:
        with open(os.path.join(a.dir, "astrolift.toml"), "w") as f:
            f.write('astrolift_version = 1\nname = "bench"\n\n[package]\ninclude = ["**"]\n')
        n = write_files(rng, os.path.join(a.dir, "src"), budget, text, data)
        print("files:", n + 1)
        return
    per_agent = budget // (a.agents * 2)
    total = 0
    for i in range(a.agents):
        agent = os.path.join(a.dir, "agents", "agent-%02d" % i)
        os.makedirs(agent, exist_ok=True)
        with open(os.path.join(agent, "astrolift.toml"), "w") as f:
            f.write('astrolift_version = 1\nname = "agent-%02d"\n\n[package]\ninclude = ["**"]\n' % i)
        total += write_files(rng, os.path.join(agent, "src"), per_agent, text, data) + 1
    # The other half: repository content no agent packages (docs, vendored data).
    total += write_files(rng, os.path.join(a.dir, "vendor"), budget - per_agent * a.agents, text, data)
    print("files:", total)


if __name__ == "__main__":
    main()
