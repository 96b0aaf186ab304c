#!/bin/sh
# Lists the files changed against the base branch, largest churn first.
set -eu
base="${1:-origin/main}"
git diff --numstat "$base"...HEAD | awk '{ print $1 + $2 "\t" $3 }' | sort -rn
