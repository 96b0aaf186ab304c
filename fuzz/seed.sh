#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seed inputs from the repository's fixtures
# (manifest, forge, package and trigger tests, examples/) and the committed
# hand-written seeds in fuzz/seeds/<target>/. Idempotent: files are named by
# content hash, so rerunning adds nothing twice and never removes what a
# campaign added.
set -euo pipefail

fuzz_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$fuzz_dir")
corpus="$fuzz_dir/corpus"
cd "$repo"

targets=(native_manifest federation config_manifest workspace_yaml skill_md tarball webhook trigger_eval)
for target in "${targets[@]}"; do mkdir -p "$corpus/$target"; done

# add TARGET < input: stores stdin under its sha1.
add() {
    local tmp
    tmp=$(mktemp)
    cat >"$tmp"
    mv "$tmp" "$corpus/$1/$(sha1sum "$tmp" | cut -c1-40)"
}

manifest_fixtures=(crates/manifest/tests crates/cli/tests crates/forge/tests crates/package/tests examples)
find_named() { find "${manifest_fixtures[@]}" -type f -name "$1" 2>/dev/null; }

while read -r f; do add native_manifest <"$f"; done < <(find_named astrolift.toml)
while read -r f; do add federation <"$f"; done < <(find_named astrolift.agents.toml)
while read -r f; do add workspace_yaml <"$f"; done < <(
    find_named astrolift.workspace.yaml
    find crates/manifest/tests/fixtures5 -type f -path '*/ws_*' -name '*.yaml'
    find "${manifest_fixtures[@]}" -type f -path '*/workspaces/*.yaml' -o -type f -path '*/envs/*.yaml'
)
while read -r f; do add config_manifest <"$f"; done < <(
    find crates/manifest/tests/fixtures5 -type f -path '*/config_*' -name '*.toml'
)
while read -r f; do add skill_md <"$f"; done < <(find_named SKILL.md)

# Tarballs: each fixture repository as GitHub serves it (one top directory),
# uncompressed (the target gzips plain input, and the mutator then works on
# tar headers directly). Only repositories under 64 KiB.
while read -r dir; do
    [ "$(du -sk "$dir" | cut -f1)" -le 64 ] || continue
    tar --create --format=gnu --sort=name --owner=0 --group=0 --mtime=@0 \
        --transform 's|^\.|owner-repo-0123abc|' -C "$dir" . | add tarball
done < <(
    find crates/manifest/tests/fixtures crates/manifest/tests/fixtures5 \
        crates/forge/tests/it/fixtures crates/package/tests/fixtures -mindepth 1 -maxdepth 1 -type d
    find examples -mindepth 1 -maxdepth 1 -type d
)

# Webhook deliveries: "<mode byte>x-github-event: <name>\n…\n\n<body>".
# Mode 0 signs with the current secret (see fuzz_targets/webhook.rs).
while read -r f; do
    event=$(basename "$(dirname "$f")")
    { printf '\0x-github-event: %s\nx-github-delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\n\n' "$event"; cat "$f"; } |
        add webhook
done < <(find crates/forge/tests/fixtures/payloads -type f -name '*.json' | sort | head -n 40)

# Trigger evaluation: "<filter>\0<payload>\0<body>", the programs of every
# [[triggers]] entry in the fixtures over each trigger test body.
bodies=$(find crates/trigger/tests/fixtures -type f -name '*.json' | sort)
find_named astrolift.toml | xargs grep -l '^\[\[triggers\]\]' | python3 -c '
import sys, tomllib
seen = set()
for path in sys.stdin.read().split():
    try:
        doc = tomllib.load(open(path, "rb"))
    except Exception:
        continue
    for t in doc.get("triggers", []):
        f, p = t.get("filter", ""), t.get("payload", "")
        if isinstance(f, str) and isinstance(p, str) and (f, p) not in seen:
            seen.add((f, p))
            print(repr((f, p)))
' | while read -r pair; do
    for body in $bodies; do
        python3 -c 'import ast,sys; f,p=ast.literal_eval(sys.argv[1]); sys.stdout.buffer.write(f.encode()+b"\0"+p.encode()+b"\0"+open(sys.argv[2],"rb").read())' "$pair" "$body" |
            add trigger_eval
    done
done

# Hand-written seeds (edge cases no fixture covers, and minimised crash inputs).
for target in "${targets[@]}"; do
    [ -d "$fuzz_dir/seeds/$target" ] || continue
    find "$fuzz_dir/seeds/$target" -type f | while read -r f; do add "$target" <"$f"; done
done

for target in "${targets[@]}"; do
    printf '%-16s %5d files %8s\n' "$target" "$(find "$corpus/$target" -type f | wc -l)" "$(du -sh "$corpus/$target" | cut -f1)"
done
