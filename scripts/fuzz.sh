#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), one after another, and
# prints per-target executions, coverage and result. For a scheduled job; not
# part of .ci/run. Needs a nightly toolchain and cargo-fuzz.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment:
#   FUZZ_TARGETS     targets to run (space-separated; default: all)
#   FUZZ_SKIP_BUILD  1 to use the binaries already built
#   FUZZ_BUILD_FLAGS extra `cargo fuzz build` flags (e.g. -O: no debug assertions, faster)
#   FUZZ_JOBS_NICE   niceness of the fuzzer processes (default 10)
#   CARGO_TARGET_DIR where cargo-fuzz builds (default fuzz/target)
#
# Logs go to fuzz/logs/<target>.log, crashes to fuzz/artifacts/<target>/.
# Exits non-zero when any target found a crash, timeout or out-of-memory.
set -euo pipefail

seconds=${1:-60}
repo=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$repo/fuzz"
target_dir=${CARGO_TARGET_DIR:-$fuzz/target}
bin_dir="$target_dir/x86_64-unknown-linux-gnu/release"
niceness=${FUZZ_JOBS_NICE:-10}
all_targets="native_manifest federation config_manifest workspace_yaml skill_md tarball webhook trigger_eval"
targets=${FUZZ_TARGETS:-$all_targets}

cd "$fuzz"
if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
    command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
    CARGO_TARGET_DIR="$target_dir" nice -n "$niceness" cargo +nightly fuzz build ${FUZZ_BUILD_FLAGS:-}
fi
./seed.sh >/dev/null
mkdir -p logs

# stat NAME LOG: a libFuzzer -print_final_stats value.
stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n 1; }

printf '%-16s %6s %12s %8s %7s %7s %9s  %s\n' target seconds execs exec/s cov corpus peak_mb result
failed=0
for target in $targets; do
    log="logs/$target.log"
    mkdir -p "artifacts/$target"
    start=$(date +%s)
    status=0
    nice -n "$niceness" "$bin_dir/$target" "corpus/$target" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="artifacts/$target/" \
        >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - start))
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    result=ok
    if [ "$status" != 0 ]; then
        failed=1
        result="FAILED (exit $status): $(grep -m1 -o 'ERROR: libFuzzer: [a-z-]*\|panicked at [^ ]*' "$log" || true) $(grep -o "artifacts/$target/[a-z]*-[0-9a-f]*" "$log" | tail -n 1)"
    fi
    printf '%-16s %6s %12s %8s %7s %7s %9s  %s\n' "$target" "$elapsed" \
        "$(stat number_of_executed_units "$log")" "$(stat average_exec_per_sec "$log")" \
        "${cov:-?}" "$(find "corpus/$target" -type f | wc -l)" "$(stat peak_rss_mb "$log")" "$result"
done
exit "$failed"
