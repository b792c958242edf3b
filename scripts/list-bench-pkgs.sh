#!/usr/bin/env bash
# Prints the package patterns (./dir) of the main module that contain
# benchmarks, one per line, for make bench. Nested modules (bench/tier1,
# e2e/a2asdk) have their own go.mod and are not listed: go test of the
# main module cannot build them.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
"${GO:-go}" list -f '{{.Dir}}' ./... | while read -r dir; do
	if grep -qsE '^func Benchmark' "$dir"/*_test.go; then
		rel="${dir#"$root"}"
		echo ".${rel:-}"
	fi
done
