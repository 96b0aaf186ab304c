#!/bin/sh
# Runs the repository's linters and unit tests and prints a one-line summary.
set -eu
status=0
if [ -f Makefile ]; then
  make lint test || status=$?
fi
if [ "$status" -eq 0 ]; then echo "checks: ok"; else echo "checks: failed ($status)"; fi
exit "$status"
