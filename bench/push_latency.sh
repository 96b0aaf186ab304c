#!/usr/bin/env bash
# Benchmark: a push of an N-agent monorepo with a fixed delay in front of every AWS request,
# side by side with a baseline build. Each run starts a fresh moto and a fresh
# `bench/latency_proxy.py` in front of it, points AWS_ENDPOINT_URL at the proxy, and runs the
# `push_benchmark` ignored test (crates/cli/tests/it/push_bench.rs) of one worktree: a real
# `astrolift serve` on DynamoDB and S3, timed from the webhook POST to the completed check run.
# The proxy counts that push's AWS requests and the most in flight.
#
# Usage: bench/push_latency.sh OUT BASELINE_WORKTREE [CASES...]
#   CASE is AGENTS:DELAY_MS[:unchanged], default "100:0 100:20 1000:0 1000:20 1000:20:unchanged".
#   RUNS (default 3) runs per case and build, alternating the builds. BASELINE_WORKTREE is a
#   checkout of the baseline commit with this commit's push_bench.rs; "-" runs ours only.
#   TIMEOUT (default 600) seconds per push: a push that takes longer is recorded as over it.
#   BASELINE_TARGET (default BASELINE_WORKTREE/target) is the baseline's own target directory:
#   a test binary runs the `astrolift` of its target directory, so the builds cannot share one.
# Writes OUT/runs.jsonl (one line per run) and prints the median table (bench/push_table.py).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
baseline="$2"
shift 2
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(100:0 100:20 1000:0 1000:20 1000:20:unchanged)
runs="${RUNS:-3}"
timeout="${TIMEOUT:-600}"
# Release code without fat LTO: the same speed within noise, a much shorter build.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16

# Each build's test binary, run directly (so that editing a worktree meanwhile changes no run).
builds=("ours=$repo")
[[ "$baseline" == "-" ]] || builds+=("baseline=$(cd "$baseline" && pwd)")
declare -A binary
for build in "${builds[@]}"; do
  target="${CARGO_TARGET_DIR:-$repo/target}"
  [[ "${build%%=*}" == baseline ]] && target="${BASELINE_TARGET:-${build#*=}/target}"
  binary[${build%%=*}]="$(cd "${build#*=}" && CARGO_TARGET_DIR="$target" cargo test --release -p astrolift-cli --test it --no-run 2>&1 \
    | sed -n 's/.*Executable tests\/it\/main.rs (\(.*\))$/\1/p' | tail -1)"
  [[ -x "${binary[${build%%=*}]}" ]] || { echo "no test binary for ${build%%=*}" >&2; exit 2; }
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# One run of one build on one case; appends its JSON line to runs.jsonl.
run_once() {
  local name="$1" tree="$2" agents="$3" delay="$4" unchanged="$5"
  local monorepo="$out/monorepo-$agents"
  [[ -d "$monorepo" ]] || python3 "$repo/bench/gen_monorepo.py" "$agents" "$monorepo" >/dev/null
  local moto_dir="$out/moto" stats="$out/proxy.json" port
  rm -f "$stats"
  eval "$(MOTO_STATE_DIR="$moto_dir" "$repo/scripts/moto.sh" start 0)"
  local moto_port="${AWS_ENDPOINT_URL##*:}"
  port="$(free_port)"
  python3 "$repo/bench/latency_proxy.py" "$port" "$moto_port" "$delay" "$stats" &
  local proxy=$!
  sleep 0.5
  local line
  line="$(cd "$tree/crates/cli" && AWS_ENDPOINT_URL="http://127.0.0.1:$port" ASTROLIFT_BENCH_REPO="$monorepo" \
    ASTROLIFT_BENCH_UNCHANGED="$unchanged" ASTROLIFT_BENCH_PROXY_PID="$proxy" \
    ASTROLIFT_BENCH_TIMEOUT="$timeout" "${binary[$name]}" push_benchmark --ignored --nocapture \
    2>/dev/null | grep '^{' || echo '{"seconds": null}')"
  kill -TERM "$proxy" && wait "$proxy" || true
  MOTO_STATE_DIR="$moto_dir" "$repo/scripts/moto.sh" stop >/dev/null 2>&1 || true
  python3 - "$line" "$stats" "$name" "$agents" "$delay" "$unchanged" "$timeout" >>"$out/runs.jsonl" <<'PY'
import json, sys
line, stats, name, agents, delay, unchanged, timeout = sys.argv[1:]
row = json.loads(line)
row.update(build=name, agents=int(agents), delay_ms=float(delay), unchanged=unchanged == "1")
if row["seconds"] is None:
    row["over_seconds"] = int(timeout)
try:
    proxy = json.load(open(stats))
    row.update(aws_requests=proxy["requests"], max_in_flight=proxy["max_in_flight"], kinds=proxy["kinds"])
except OSError:
    pass
print(json.dumps(row))
PY
  tail -1 "$out/runs.jsonl" | cut -c1-200
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
for case in "${cases[@]}"; do
  IFS=: read -r agents delay kind <<<"$case"
  unchanged=0
  [[ "${kind:-}" == "unchanged" ]] && unchanged=1
  for _ in $(seq "$runs"); do
    for build in "${builds[@]}"; do
      run_once "${build%%=*}" "${build#*=}" "$agents" "$delay" "$unchanged"
    done
  done
done
python3 "$repo/bench/push_table.py" "$out/runs.jsonl"
