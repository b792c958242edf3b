#!/usr/bin/env bash
# Runs a command and says how long it took, keeping its exit status:
#   scripts/timed.sh LABEL COMMAND [ARG...]
# make test prints one such line per part, so CI logs show the time budget.
set -uo pipefail
label=${1:?usage: timed.sh LABEL COMMAND...}
shift
start=$(date +%s)
"$@"
status=$?
echo "make test: $label took $(($(date +%s) - start))s (exit $status)" >&2
exit "$status"
