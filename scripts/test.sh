#!/usr/bin/env bash
# The whole test suite: starts the local AWS endpoint (moto_server), runs every
# workspace test against it, and stops it again. README.md and .ci/run call this.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/astrolift-target}"

# Cargo names and fingerprints a workspace crate by its path inside the workspace, so
# a target directory shared by two clones (CI's and a developer's) keeps a crate built
# in the other clone as fresh, with that clone's `env!("CARGO_MANIFEST_DIR")` baked in:
# its tests then read fixtures from the other clone, or from a folder that is gone.
# When the clone changes, the workspace's own sources are touched so that cargo
# rebuilds the workspace crates (registry dependencies stay built).
source_root_marker="$CARGO_TARGET_DIR/.astrolift-source-root"
if [ "$(cat "$source_root_marker" 2>/dev/null || true)" != "$PWD" ]; then
  echo "target directory last built from another clone: rebuilding the workspace crates" >&2
  find crates functions tests -type f -name '*.rs' -exec touch {} +
  mkdir -p "$CARGO_TARGET_DIR"
  echo "$PWD" > "$source_root_marker"
fi

# moto 5.2.5 or newer: older 5.2.x answer CompleteMultipartUpload with an XML
# root the AWS SDK for Rust rejects (getmoto/moto#10055).
moto_ok() {
  command -v moto_server >/dev/null 2>&1 && python3 - <<'PY'
import sys
from importlib.metadata import version
parts = [int(p) for p in version("moto").split(".")[:3] if p.isdigit()]
sys.exit(0 if parts >= [5, 2, 5] else 1)
PY
}
if ! moto_ok; then
  echo "installing moto[server]>=5.2.5 from PyPI" >&2
  python3 -m pip install --quiet --upgrade 'moto[server]>=5.2.5'
  hash -r
fi

# shellcheck disable=SC1090
eval "$(scripts/moto.sh start)"
trap 'scripts/moto.sh stop >/dev/null 2>&1 || true' EXIT
export ASTROLIFT_REQUIRE_AWS=1

# The binaries the containment tests start as processes (crates/cli
# tests/it/containment.rs, functions/trigger tests/it/release.rs), built with
# `release-test`: the shipped profile's runtime settings (panic strategy, no
# overflow checks), without its LTO pass (Cargo.toml). Those tests fail rather
# than skip with ASTROLIFT_REQUIRE_RELEASE_BINS set.
cargo build --profile release-test --locked -p astrolift-cli --bin astrolift -p astrolift-fn-trigger --bin trigger
export ASTROLIFT_RELEASE_BIN_DIR="$CARGO_TARGET_DIR/release-test" ASTROLIFT_REQUIRE_RELEASE_BINS=1

# One feature resolution for every `cargo test` of the suite: the whole workspace,
# every target, so that the doc tests and the smoke scripts (scripts/test-binary.sh) find
# everything built rather than building shared dependencies again with another feature
# set. The functions' `stack` tests need the deploy smoke test's stack (they fail rather
# than skip under ASTROLIFT_REQUIRE_AWS): scripts/smoke-webhook.sh and smoke-trigger.sh
# run them. Arguments are cargo's (`-p`, `--test`); without them, every test but those.
# The benchmarks run once each as tests, apart: criterion's harness takes no `--skip`
# (the same packages and dev-dependencies, so the same features and artifacts). The main run
# goes on past a failing test binary, so one run reports every failure.
if [ "$#" -gt 0 ]; then
  cargo test --workspace --all-targets --locked "$@"
else
  cargo test --workspace --lib --bins --tests --examples --locked --no-fail-fast -- --skip stack::
  cargo test --workspace --benches --locked
fi
# The SAM template deployed into moto's CloudFormation, with the store tests on its resources.
scripts/deploy-smoke.sh
cargo test --workspace --doc --locked
