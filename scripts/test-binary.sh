#!/usr/bin/env bash
# Runs one package's `it` test binary as the workspace-wide build of scripts/test.sh made
# it, with libtest's arguments (filters, --skip, --exact):
#
#   scripts/test-binary.sh astrolift-store dynamo s3 template_shape
#
# Why not `cargo test -p PACKAGE --test it`: cargo resolves the features of shared
# dependencies for the packages a command selects, so a `-p` selection builds every
# dependency whose features differ a second time, into other artifacts (a rebuild per
# selection). `cargo test --workspace --all-targets --no-run` with
# the flags of scripts/test.sh finds everything built and only names the executable.
# The binary runs as `cargo test` runs it: from its package's directory, with
# CARGO_MANIFEST_DIR set.
set -euo pipefail
cd "$(dirname "$0")/.."

package="${1:?usage: scripts/test-binary.sh PACKAGE [LIBTEST ARGS...]}"
shift

artifacts="$(cargo test --workspace --all-targets --locked --no-run --message-format=json)"
found="$(PACKAGE="$package" python3 -c '
import json, os, sys
package = os.environ["PACKAGE"]
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    target = message.get("target") or {}
    if (message.get("reason") == "compiler-artifact" and message.get("executable")
            and target.get("name") == "it" and "test" in target.get("kind", [])
            and ("#" + package + "@") in message.get("package_id", "")):
        print(message["executable"])
        print(os.path.dirname(message["manifest_path"]))
        break
' <<<"$artifacts")"
executable="$(sed -n 1p <<<"$found")"
package_dir="$(sed -n 2p <<<"$found")"
if [ -z "$executable" ]; then
  echo "scripts/test-binary.sh: no \`it\` test binary of $package in the workspace build" >&2
  exit 1
fi
cd "$package_dir"
CARGO_MANIFEST_DIR="$package_dir" exec "$executable" "$@"
