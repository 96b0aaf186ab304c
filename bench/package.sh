#!/usr/bin/env bash
# Package benchmarks: throughput against tar|gzip -6|sha256sum, and
# peak RSS packaging every agent of a 1 GiB repository tarball.
#
#   bench/package.sh [WORKDIR]        RUNS=5 by default
#
# Needs: cargo, python3, GNU tar, gzip, /usr/bin/time. Generated inputs are
# kept in WORKDIR (default /tmp/astrolift-bench-package) and reused.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-${TMPDIR:-/tmp}/astrolift-bench-package}
RUNS=${RUNS:-5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$CARGO_TARGET_DIR/release/examples

cargo build --release --quiet -p astrolift-package --example package_dir --example package_tarball
mkdir -p "$WORK"
cd "$WORK"

if [ ! -d tree200 ]; then
  python3 "$ROOT/bench/gen_tree.py" tree200 --size-mib 200 >/dev/null
fi
if [ ! -f mono.tar.gz ]; then
  python3 "$ROOT/bench/gen_tree.py" mono/octo-mono-1a2b3c4 --size-mib 1024 --agents 20 >/dev/null
  tar -C mono -cf - octo-mono-1a2b3c4 | gzip -1 > mono.tar.gz
fi

# Warm the page cache so both sides read from memory.
tar -cf - tree200 > /dev/null

pipeline() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - tree200 | gzip -6 | sha256sum > /dev/null
}
export -f pipeline

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m}'; }

: > ours.times
: > pipeline.times
for _ in $(seq "$RUNS"); do
  /usr/bin/time -f "%e %U %S" -a -o ours.times "$BIN/package_dir" tree200 ours.tar.gz > ours.json
  /usr/bin/time -f "%e %U %S" -a -o pipeline.times bash -c pipeline
done
# Compressed size of the pipeline's output (untimed).
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - tree200 | gzip -6 > pipeline.tar.gz

ours_wall=$(awk '{print $1}' ours.times | median)
pipe_wall=$(awk '{print $1}' pipeline.times | median)
ours_cpu=$(awk '{print $2 + $3}' ours.times | median)
pipe_cpu=$(awk '{print $2 + $3}' pipeline.times | median)
ours_size=$(stat -c %s ours.tar.gz)
pipe_size=$(stat -c %s pipeline.tar.gz)
tree_bytes=$(du -sb --apparent-size tree200 | cut -f1)

/usr/bin/time -v "$BIN/package_tarball" mono.tar.gz out-mono > mono.json 2> mono.time
rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' mono.time)
mono_wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' mono.time)
mono_bytes=$(stat -c %s mono.tar.gz)
agents=$(wc -l < mono.json)

cat <<REPORT
| Measure | astrolift (package_dir) | tar \| gzip -6 \| sha256sum | ratio |
|---|---|---|---|
| Wall time, median of $RUNS ($((tree_bytes / 1048576)) MiB tree) | ${ours_wall} s | ${pipe_wall} s | $(awk "BEGIN {printf \"%.2fx\", $pipe_wall / $ours_wall}") faster |
| CPU time (user+sys), median | ${ours_cpu} s | ${pipe_cpu} s | $(awk "BEGIN {printf \"%.2fx\", $pipe_cpu / $ours_cpu}") less |
| Compressed size | ${ours_size} B | ${pipe_size} B | $(awk "BEGIN {printf \"%.4f\", $ours_size / $pipe_size}") |

Peak RSS packaging all ${agents} agents of a $((mono_bytes / 1048576)) MiB tar.gz (1 GiB uncompressed): $((rss_kb / 1024)) MiB (${rss_kb} kB), wall ${mono_wall}.
Load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores.
REPORT
