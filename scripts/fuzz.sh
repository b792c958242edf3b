#!/usr/bin/env bash
# Runs every Fuzz target of the module for FUZZTIME each (default 20s). New
# crashers are written by go test to the package's testdata/fuzz/FuzzX/.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
fuzztime=${FUZZTIME:-20s}

ran=0
for pkg in $("$go" list ./...); do
	targets=$("$go" test -list '^Fuzz' "$pkg" | grep -E '^Fuzz' || true)
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		"$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
		ran=$((ran + 1))
	done
done
echo "fuzz: $ran target(s) run for $fuzztime each"
