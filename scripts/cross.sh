#!/usr/bin/env bash
# Builds a static synapse binary for every target listed in TARGETS_FILE and
# prints the sizes. A target line is GOOS/GOARCH or GOOS/arm/GOARM; blank lines
# and # comments are skipped. Output names: OUT_DIR/synapse-GOOS-GOARCH, with
# vGOARM appended for arm (synapse-linux-armv7). When GRPC_TAGS is set, each
# target is built a second time with those tags added, as NAME-grpc.
#
# Usage: LDFLAGS="-s -w ..." TAGS="..." [GRPC_TAGS="grpc grpcnotrace"] scripts/cross.sh build/targets.txt dist
set -euo pipefail

targets=${1:?usage: cross.sh TARGETS_FILE OUT_DIR}
out=${2:?usage: cross.sh TARGETS_FILE OUT_DIR}
go=${GO:-go}
ldflags=${LDFLAGS:--s -w}
tags=${TAGS:-}
grpc_tags=${GRPC_TAGS:-}
cd "$(dirname "$0")/.."
mkdir -p "$out"

built=0
while IFS= read -r line || [ -n "$line" ]; do
	line=${line%%#*}
	line=$(echo "$line" | tr -d '[:space:]')
	[ -n "$line" ] || continue
	IFS=/ read -r goos goarch goarm extra <<<"$line"
	if [ -z "$goos" ] || [ -z "$goarch" ] || [ -n "${extra:-}" ]; then
		echo "cross: bad target line '$line' (want GOOS/GOARCH[/GOARM|GOMIPS])" >&2
		exit 1
	fi
	gomips=
	case $goarch in
	mips | mipsle)
		gomips=${goarm:-softfloat} goarm=
		base="synapse-$goos-$goarch"
		[ "$gomips" = softfloat ] || base="$base-$gomips"
		;;
	*) base="synapse-$goos-$goarch${goarm:+v$goarm}" ;;
	esac
	for variant in plain ${grpc_tags:+grpc}; do
		name=$base vtags=$tags
		if [ "$variant" = grpc ]; then
			name=$base-grpc vtags="$tags $grpc_tags"
		fi
		GOOS=$goos GOARCH=$goarch GOARM=${goarm:-} GOMIPS=$gomips CGO_ENABLED=0 \
			"$go" build -trimpath -tags "$vtags" -ldflags "$ldflags" -o "$out/$name" .
		size=$(wc -c <"$out/$name")
		printf '%-31s %10d bytes %7.2f MiB\n' "$out/$name" "$size" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')"
		built=$((built + 1))
	done
done <"$targets"

if [ "$built" -eq 0 ]; then
	echo "cross: no targets in $targets" >&2
	exit 1
fi
