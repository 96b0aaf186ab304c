#!/usr/bin/env bash
# What each shipped binary links. For the three Lambda functions and `astrolift`:
# the stripped size as `[profile.release]` ships it, its largest sections, and the text per
# crate (bench/crate_sizes.py, the `cargo bloat --crates` figure).
#
#   bench/binary_sizes.sh OUT_DIR [BIN_DIR]
#
# Without BIN_DIR it builds with the `bench` profile (`[profile.release]` without `strip`,
# Cargo.toml), each function by itself, as Cargo Lambda builds it (`--bin <name>`): built
# together with `astrolift`, Cargo would unify features and link the CLI's SQLite into the
# functions. BIN_DIR: a directory that already holds the four unstripped binaries.
# Writes OUT_DIR/sizes.md and OUT_DIR/crates-<bin>.txt. Needs binutils (`strip`, `nm`, `size`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "$1")
BINS=${2:-}
mkdir -p "$OUT"
cd "$ROOT"
if [ -z "$BINS" ]; then
  TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
  for package in astrolift-fn-webhook astrolift-fn-trigger astrolift-fn-sync; do
    cargo build --profile bench --locked -p "$package"
  done
  cargo build --profile bench --locked -p astrolift-cli --bin astrolift
  BINS=$TARGET/bench
fi

{
  echo "| binary | stripped bytes | .text | .eh_frame | .rodata |"
  echo "| --- | ---: | ---: | ---: | ---: |"
} > "$OUT/sizes.md"
for bin in webhook trigger sync astrolift; do
  strip -o "$OUT/$bin.stripped" "$BINS/$bin"
  section() { size -A "$OUT/$bin.stripped" | awk -v s="$1" '$1 == s {print $2}'; }
  echo "| \`$bin\` | $(stat -c %s "$OUT/$bin.stripped") | $(section .text) | $(section .eh_frame) | $(section .rodata) |" >> "$OUT/sizes.md"
  python3 "$ROOT/bench/crate_sizes.py" "$BINS/$bin" 25 > "$OUT/crates-$bin.txt"
  rm "$OUT/$bin.stripped"
done
cat "$OUT/sizes.md"
