#!/bin/sh
# Collects the last hour of EMR gateway errors for the triage prompt.
set -eu
echo "collecting"
