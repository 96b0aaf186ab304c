#!/bin/sh
# Pages the on-call clinician (an example: prints what it would send).
echo "page: $*"
