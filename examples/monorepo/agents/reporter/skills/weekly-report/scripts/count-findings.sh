#!/bin/sh
# Counts findings by severity. Usage: count-findings.sh FILE...
set -eu
for f in "$@"; do
  sed -n 's/.*"severity": *"\([a-z]*\)".*/\1/p' "$f"
done | sort | uniq -c | sort -rn
