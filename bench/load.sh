#!/usr/bin/env bash
# serve load: signed webhooks against `astrolift serve` on loopback,
# serve pinned to CPU 0 and wrk to CPU 1, SQLite state in a temp dir, the
# fake GitHub behind it.
#
#   bench/load.sh [WORKDIR]      DURATION=60 CONNECTIONS="1 8 64" by default
#
# Each case sends ONE fixed request over and over (wrk replays identical
# requests), so every request is a complete, correctly signed delivery:
#   ping   `ping` event: HMAC verified, answered 200 "pong"; no store access.
#   star   `star` event (ignored): verified, parsed, routed, 200 "ignored".
#   push   `push` to an unregistered repository with ONE delivery id: the
#          first request records the delivery and queues one sync job (which
#          fails on the fake: no such repository); every later one is
#          verified, parsed, and answered 200 "duplicate" after one SQLite
#          conditional insert (`record_delivery`).
#   issues `issues.opened` on `local/monorepo` (examples/monorepo, registered
#          with `check --apply` before serve starts): the trigger fan-out as
#          production runs it: a keyed read of the repository's `issues`
#          bindings, the trust policy, the jq payload mapping in the worker
#          pool, and the dispatch's idempotent insert (recorded once, then a
#          duplicate); answered 202.
#   issues-new  the same with a fresh delivery id per request: every request
#          records a new dispatch and a message in the local outbox (its bound
#          raised to OUTBOX_MAX, 10,000,000 here, for the run's length).
# Concurrency rises with wrk's connection count (wrk is closed-loop: the
# rate is what serve sustains at that concurrency).
#
# Needs: wrk (apt-get install wrk), taskset, python3, cargo. BIN may point to
# a prebuilt `astrolift` (release); FAKE to a prebuilt `fake-github`, or
# FAKE=none to run without one.
# Prints one Markdown table row per case (with serve's CPU time, its jq workers' included,
# per answered request), and RSS samples to WORKDIR/rss.log.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-${TMPDIR:-/tmp}/astrolift-bench-load}
DURATION=${DURATION:-60}
CONNECTIONS=${CONNECTIONS:-"1 8 64"}
CASES=${CASES:-"ping star push issues issues-new"}
SECRET=load-bench-webhook-secret
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BIN:-}" ]; then
  # The profile `astrolift` is installed with (`cargo install` builds `release`).
  cargo build --release --quiet -p astrolift-cli --bin astrolift
  BIN=$CARGO_TARGET_DIR/release/astrolift
fi
if [ -z "${FAKE:-}" ]; then
  cargo build --quiet -p astrolift-fake-github --bin fake-github
  FAKE=$CARGO_TARGET_DIR/debug/fake-github
fi

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ "$FAKE" = none ]; then
  # No GitHub at all: the one queued push job fails to connect (and is logged).
  FAKE_PORT=9
  APP_ID=12345
  KEY_FILE=$ROOT/tests/fake-github/keys/test-app-private-key.pem
else
  FAKE_PORT=$(free_port)
  "$FAKE" --port "$FAKE_PORT" --installation 77 > fake.out 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q GITHUB_APP_ID fake.out 2>/dev/null && break; sleep 0.1; done
  APP_ID=$(sed -n 's/^GITHUB_APP_ID=//p' fake.out)
  KEY_FILE=$(sed -n 's/^GITHUB_APP_PRIVATE_KEY_FILE=//p' fake.out)
fi

# The example monorepo registered under project `local` (as scripts/demo.sh does),
# so the `issues` cases fan out to its triage agent's GitHub-sourced binding.
"$BIN" env-spec upsert triage-prod --project-id local --agent-type claude \
  --runtime claude-code --config-repo local/monorepo \
  --manifest-path config/triage/config.toml \
  --state "sqlite:$WORK/state.db" > setup.log 2>&1
"$BIN" check --apply "$ROOT/examples/monorepo" \
  --state "sqlite:$WORK/state.db" --blobs "file:$WORK/blobs" >> setup.log 2>&1

PORT=$(free_port)
ASTROLIFT_OUTBOX_MAX=${OUTBOX_MAX:-10000000} GITHUB_API_URL=http://127.0.0.1:$FAKE_PORT GITHUB_APP_ID=$APP_ID \
  GITHUB_APP_PRIVATE_KEY="$(cat "$KEY_FILE")" GITHUB_WEBHOOK_SECRET=$SECRET \
  ASTROLIFT_LOG_LEVEL=info \
  taskset -c 0 "$BIN" serve --listen "127.0.0.1:$PORT" \
  --state "sqlite:$WORK/state.db" --blobs "file:$WORK/blobs" > serve.log 2>&1 &
SERVE=$!
PIDS+=("$SERVE")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

# One wrk script per case: the body, its signature and the GitHub headers.
python3 "$ROOT/bench/load_requests.py" "$SECRET" "$WORK"

# RSS of serve every second, with the case running.
echo "case connections second rss_kib" > rss.log
sample_rss() {
  local second=0
  while kill -0 "$SERVE" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVE/status" 2>/dev/null || echo 0)
    echo "$(cat current 2>/dev/null || echo warmup) $second $rss" >> rss.log
    second=$((second + 1))
    sleep 1
  done
}
echo "warmup 0" > current
sample_rss &
PIDS+=($!)

# CPU time (user + system, clock ticks) of serve, its live children (the jq workers) and
# the children it has reaped: what one request costs, whatever else the machine runs.
cpu_ticks() {
  local total=0 pid
  for pid in "$SERVE" $(pgrep -P "$SERVE" || true); do
    # Fields after the command name: utime stime cutime cstime are 12-15 of that rest.
    total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15}' || echo 0)))
  done
  echo "$total"
}

echo "| case | connections | requests/s | p50 ms | p99 ms | non-2xx | socket errors | CPU µs/request |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for case in $CASES; do
  for connections in $CONNECTIONS; do
    echo "$case $connections" > current
    ticks_before=$(cpu_ticks)
    taskset -c 1 wrk -t1 -c"$connections" -d"${DURATION}s" --latency \
      -s "$WORK/$case.lua" "http://127.0.0.1:$PORT/github/webhook" > "wrk-$case-$connections.txt"
    ticks=$(($(cpu_ticks) - ticks_before))
    python3 "$ROOT/bench/load_requests.py" --summarize "$case" "$connections" "wrk-$case-$connections.txt" \
      "$ticks" "$(getconf CLK_TCK)"
  done
done
echo "idle end" > current
sleep 2
echo
echo "RSS (KiB) after the first 10 s, and at the end of each case:"
awk 'NR > 1 { key = $1 " " $2; seen[key]++; if (seen[key] == 10) first[key] = $4; last[key] = $4; if (!(key in order)) order[key] = NR }
     END { for (k in last) printf "%s\t%s\t%s\t%s\n", order[k], k, first[k], last[k] }' rss.log |
  sort -n | cut -f2- | sed 's/^/  /'
echo "VmHWM (peak RSS): $(awk '/^VmHWM:/ {print $2, $3}' "/proc/$SERVE/status")"
echo "error log lines: $(grep -c '"level":"ERROR"\|ERROR' serve.log || true)"
