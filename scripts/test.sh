#!/usr/bin/env bash
# The whole test suite: starts the local AWS endpoint (moto_server), runs every
# workspace test against it, and stops it again. README.md and .ci/run call this.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/astrolift-target}"

if ! command -v moto_server >/dev/null 2>&1; then
  echo "moto_server not found; installing moto[server] from PyPI" >&2
  python3 -m pip install --quiet 'moto[server]'
fi

# shellcheck disable=SC1090
eval "$(scripts/moto.sh start)"
trap 'scripts/moto.sh stop >/dev/null 2>&1 || true' EXIT
export ASTROLIFT_REQUIRE_AWS=1

cargo test --workspace --all-targets --locked "$@"
cargo test --workspace --doc --locked
