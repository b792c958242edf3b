#!/usr/bin/env bash
# Prints the package patterns (./dir) of the module that contain benchmarks,
# one per line, for make bench.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -rlE --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git '^func Benchmark' . 2>/dev/null |
	xargs -r -n1 dirname | sort -u | sed -e 's|^\./||' -e 's|^\.$||' -e 's|^|./|'
