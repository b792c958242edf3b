#!/usr/bin/env bash
# Checks every Go module of the repository (each go.mod, the root and the
# nested ones such as bench/tier1): go mod tidy -diff must print nothing,
# go vet and go build must pass. make modules runs it; make test calls that.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}

mods=$(git ls-files --cached --others --exclude-standard -- 'go.mod' '*/go.mod' | grep -v '/node_modules/' | sort)
[ -n "$mods" ] || { echo "modules: no go.mod found" >&2; exit 1; }
failed=0
for mod in $mods; do
	dir=$(dirname "$mod")
	echo "== module $dir"
	if ! diff=$(cd "$dir" && "$go" mod tidy -diff 2>&1); then
		echo "modules: $dir is not tidy (run: cd $dir && go mod tidy):" >&2
		echo "$diff" >&2
		failed=1
		continue
	fi
	(cd "$dir" && "$go" vet ./... && "$go" build -o /dev/null ./...) || failed=1
done
exit "$failed"
