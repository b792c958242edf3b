#!/usr/bin/env bash
# Where the bytes of the release binaries go (make size): for each target of
# TARGETS_FILE, the size of the release binary (stripped, as make cross
# builds it) and of its -grpc variant, then the packages that contribute
# most, from the symbols of an unstripped build of the same target
# (internal/cmd/binsize: text, rodata and data symbols summed by package;
# pclntab, the per-function tables, comes on top and grows with the text).
#
# Usage: LDFLAGS=... TAGS=... GRPC_TAGS=... [TOP=12] scripts/size.sh build/targets.txt dist
set -euo pipefail
targets=${1:?usage: size.sh TARGETS_FILE OUT_DIR}
out=${2:?usage: size.sh TARGETS_FILE OUT_DIR}
go=${GO:-go}
top=${TOP:-12}
cd "$(dirname "$0")/.."

echo "== release binaries (make cross)"
scripts/cross.sh "$targets" "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/synapse-size.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/binsize" ./internal/cmd/binsize
# The release flags without -s -w: the same code, with its symbol table.
full_ldflags=$(echo "${LDFLAGS:-}" | sed -e 's/\(^\| \)-[sw]\>//g')
while IFS= read -r line || [ -n "$line" ]; do
	line=${line%%#*}
	line=$(echo "$line" | tr -d '[:space:]')
	[ -n "$line" ] || continue
	IFS=/ read -r goos goarch goarm <<<"$line"
	gomips=
	case $goarch in
	mips | mipsle)
		gomips=${goarm:-softfloat} goarm=
		name="synapse-$goos-$goarch"
		[ "$gomips" = softfloat ] || name="$name-$gomips"
		;;
	*) name="synapse-$goos-$goarch${goarm:+v$goarm}" ;;
	esac
	GOOS=$goos GOARCH=$goarch GOARM=${goarm:-} GOMIPS=$gomips CGO_ENABLED=0 \
		"$go" build -trimpath -tags "${TAGS:-}" -ldflags "$full_ldflags" -o "$tmp/$name" .
	echo
	echo "== $name: $(wc -c <"$out/$name") bytes; largest packages"
	"$tmp/binsize" -top "$top" "$tmp/$name"
done <"$targets"
