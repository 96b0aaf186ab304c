#!/usr/bin/env bash
# The main job, locally, over examples/: discover, validate, package, plan and
# register every example repository on the embedded stores (.astrolift/state.db
# and .astrolift/blobs in the current directory). README.md step 1.
set -euo pipefail
cd "$(dirname "$0")/.."

# `ASTROLIFT_BIN` names an `astrolift` to run instead of building one (the tests' own).
if [[ -n "${ASTROLIFT_BIN:-}" ]]; then
  astrolift() { "$ASTROLIFT_BIN" "$@"; }
else
  astrolift() { cargo run -q --locked -p astrolift-cli -- "$@"; }
fi

# The monorepo's triage agent names the env spec `triage-prod` for one of its
# triggers. Env specs belong to a project and an operator defines them, so the
# sync refuses an agent that names one its project lacks: define it first, for
# the project `check --apply` registers local examples under (`local`).
astrolift env-spec upsert triage-prod --project-id local \
  --agent-type claude --runtime claude-code \
  --config-repo local/monorepo --manifest-path config/triage/config.toml

# The examples' catalogue and organization skills (`pr-review@1.2.0`,
# `steadymd/runbooks/clinical-triage@main`, `platform/runbooks/ci-triage@main`) live in
# tests/fake-github/skill-repos/, the repositories the tests serve from the fake GitHub.
# Registered as `file:` sources, the CLI reads them from disk, without App credentials,
# so no reference is `skill/unresolved` (docs/reference.md §5.1, "Remote skills").
astrolift catalogue register file:tests/fake-github/skill-repos/catalogue
for alias in steadymd platform; do
  astrolift skill-repo register "$alias" file:tests/fake-github/skill-repos/runbooks \
    --project-id local
done

for repository in examples/*/; do
  echo "== ${repository%/}"
  astrolift check --apply "$repository"
done
