#!/usr/bin/env bash
# Benchmark of `astrolift validate`.
#
# Builds the release binary, generates monorepos of N agents
# (bench/gen_monorepo.py) and times, in the same run:
#   - astrolift validate DIR --format json > /dev/null
#   - find DIR -type f -exec cat {} + > /dev/null      (the baseline)
# with hyperfine when installed (apt-get install -y hyperfine), otherwise a
# median-of-runs loop. Prints the median of each, the ratio to `cat`, and
# the time per agent, so linear scaling is visible.
#
# Usage: bench/validate.sh [N...]        (default: 100 1000 10000)
# Environment: BENCH_DIR (default /tmp/astrolift-bench), RUNS (default 10),
#              CARGO_TARGET_DIR (default target),
#              NICE (default 0; e.g. -20 as root runs the timed commands ahead of
#              other work on a shared machine, both validate and the baseline).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000 10000)
bench_dir="${BENCH_DIR:-/tmp/astrolift-bench}"
runs="${RUNS:-10}"
nice_level="${NICE:-0}"
target="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target/release/astrolift"

# The profile `astrolift` is installed with (`cargo install` builds `release`).
(cd "$repo" && cargo build --release --quiet -p astrolift-cli)
echo "binary: $bin"
echo "machine: $(nproc) cores, $(uname -sr)"

# Median wall time of a shell command in seconds, without hyperfine.
median_loop() {
    local cmd="$1" i start end times=()
    nice -n "$nice_level" bash -c "$cmd" # warm-up
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        nice -n "$nice_level" bash -c "$cmd"
        end=$(date +%s%N)
        times+=("$(((end - start) / 1000))")
    done
    printf '%s\n' "${times[@]}" | sort -n |
        awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.6f\n", m / 1e6}'
}

# Prints "validate_median cat_median validate_cpu" in seconds for one tree
# (validate_cpu: mean user + system time, known only with hyperfine).
measure() {
    local dir="$1"
    local validate="$bin validate $dir --format json > /dev/null"
    local baseline="find $dir -type f -exec cat {} + > /dev/null"
    if command -v hyperfine > /dev/null; then
        local json
        json="$(mktemp)"
        # -N: no intermediate shell (hyperfine sends output to /dev/null itself);
        # -i: validate exits 1 on findings, and its timing still counts.
        nice -n "$nice_level" hyperfine --style none -N -i --warmup 2 --runs "$runs" --export-json "$json" \
            "$bin validate $dir --format json" "find $dir -type f -exec cat {} +" > /dev/null
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(r[0]["median"], r[1]["median"], r[0]["user"] + r[0]["system"])' "$json"
        rm -f "$json"
    else
        echo "$(median_loop "$validate") $(median_loop "$baseline") nan"
    fi
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); nice $nice_level; $runs runs"
printf '\n%8s %8s %14s %12s %8s %16s %12s\n' agents files "validate (s)" "cat (s)" ratio "µs per agent" "cpu (s)"
for n in "${sizes[@]}"; do
    dir="$bench_dir/n$n"
    python3 "$repo/bench/gen_monorepo.py" "$n" "$dir"
    files=$(find "$dir" -type f | wc -l)
    "$bin" validate "$dir" --format json > "$bench_dir/n$n.json" || true
    errors=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["agents"]), sum(x["severity"]=="error" for x in d["diagnostics"]))' "$bench_dir/n$n.json")
    read -r validate_s cat_s cpu_s < <(measure "$dir")
    python3 - "$n" "$files" "$validate_s" "$cat_s" "$cpu_s" "$errors" <<'PY'
import sys
n, files, v, c, cpu = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
agents, errors = sys.argv[6].split()
print(f"{n:8d} {files:8d} {v:14.4f} {c:12.4f} {v / c:8.2f} {v / n * 1e6:16.1f} {cpu:12.4f}   ({agents} agents, {errors} errors)")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
