#!/usr/bin/env bash
# Start or stop a local moto_server (AWS mock over HTTP) for the AWS-backed contract tests.
#
#   eval "$(scripts/moto.sh start [PORT])"   # starts moto on 127.0.0.1, prints the exports
#   scripts/moto.sh stop                      # stops the server started by `start`
#
# PORT defaults to $MOTO_PORT, then 5055; `0` picks a free port. The PID and port are kept in
# $MOTO_STATE_DIR (default: target/moto). Requires `moto_server` (pip install 'moto[server]>=5.2.5';
# older 5.2.x answer CompleteMultipartUpload with a wrong XML root that the Rust SDK rejects,
# getmoto/moto#10055). It runs through scripts/moto_server.py, which serialises DynamoDB requests
# (moto's transactions are not isolated under its threaded server); $MOTO_SERVER names another
# command to run instead.
set -euo pipefail

state_dir="${MOTO_STATE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/target/moto}"
pid_file="$state_dir/moto.pid"
log_file="$state_dir/moto.log"
here="$(cd "$(dirname "$0")" && pwd)"
moto_server="${MOTO_SERVER:-python3 $here/moto_server.py}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

print_exports() {
  local port="$1"
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  echo "export AWS_ACCESS_KEY_ID=testing"
  echo "export AWS_SECRET_ACCESS_KEY=testing"
  echo "export AWS_REGION=us-east-1"
}

is_running() {
  [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

start() {
  python3 -c 'import moto.server' 2>/dev/null || [[ -n "${MOTO_SERVER:-}" ]] \
    || { echo "moto is not installed: pip install 'moto[server]'" >&2; exit 2; }
  mkdir -p "$state_dir"
  if is_running; then
    print_exports "$(cat "$state_dir/moto.port")"
    return
  fi
  local port="${1:-${MOTO_PORT:-5055}}"
  [[ "$port" == 0 ]] && port="$(free_port)"
  # shellcheck disable=SC2086 # $moto_server is a command with its arguments
  $moto_server -H 127.0.0.1 -p "$port" >"$log_file" 2>&1 &
  echo $! >"$pid_file"
  echo "$port" >"$state_dir/moto.port"
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/moto-api/', timeout=1)" 2>/dev/null; then
      print_exports "$port"
      return
    fi
    if ! is_running; then
      echo "moto_server exited; log follows:" >&2; cat "$log_file" >&2; rm -f "$pid_file"; exit 1
    fi
    sleep 0.1
  done
  echo "moto_server did not answer on port $port within 10 s; log: $log_file" >&2
  exit 1
}

stop() {
  if is_running; then
    local pid
    pid="$(cat "$pid_file")"
    kill "$pid"
    # moto exits from its SIGTERM handler, which can take a few seconds when it is busy.
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pid_file" "$state_dir/moto.port"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  *) echo "usage: $0 start [PORT] | stop" >&2; exit 2 ;;
esac
