#!/usr/bin/env bash
# The main job, locally, over examples/: discover, validate, package, plan and
# register every example repository on the embedded stores (.astrolift/state.db
# and .astrolift/blobs in the current directory). README.md step 1.
set -euo pipefail
cd "$(dirname "$0")/.."

astrolift() { cargo run -q --locked -p astrolift-cli -- "$@"; }

# The monorepo's triage agent names the env spec `triage-prod` for one of its
# triggers. Env specs belong to a project and an operator defines them, so the
# sync refuses an agent that names one its project lacks: define it first, for
# the project `check --apply` registers local examples under (`local`).
astrolift env-spec upsert triage-prod --project-id local \
  --agent-type claude --runtime claude-code \
  --config-repo local/monorepo --manifest-path config/triage/config.toml

for repository in examples/*/; do
  echo "== ${repository%/}"
  astrolift check --apply "$repository"
done
