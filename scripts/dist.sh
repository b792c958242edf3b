#!/usr/bin/env bash
# make dist: the release artefacts in OUT_DIR (default dist/):
#   synapse-VERSION-GOOS-ARCH.tar.gz  per target of TARGETS_FILE: the static
#       binary (as synapse), LICENSE, NOTICE, README.md, CHANGELOG.md,
#       config.example.json and synapse.service
#   synapse_VERSION_ARCH.deb  amd64, arm64, armhf (build/pkg, nfpm)
#   synapse_VERSION_ARCH.ipk  mipsel_24kc, mips_24kc, with a procd init script
#   synapse-VERSION-oci.tar   an OCI layout: an image FROM scratch per target
#       and a multi-arch index over them
#   synapse-VERSION-GOOS-ARCH  the bare binary of each target, what
#       synapse update --url takes, and with MINISIGN_KEY its signature
#       synapse-VERSION-GOOS-ARCH.minisig (prehashed Ed25519 of the binary)
#   SHA256SUMS          sha256sum's format, one line per artefact
#   SHA256SUMS.minisig  its minisign signature, when MINISIGN_KEY names the
#       secret key (go run ./build/minisign keygen, made at release time and
#       kept off the repository); without it SHA256SUMS and the binaries
#       are left unsigned and this says so
#
# Usage: VERSION=v1.2.3 LDFLAGS=... TAGS=... [MINISIGN_KEY=FILE] scripts/dist.sh build/targets.txt dist
set -euo pipefail
targets=${1:?usage: dist.sh TARGETS_FILE OUT_DIR}
out=${2:?usage: dist.sh TARGETS_FILE OUT_DIR}
go=${GO:-go}
version=${VERSION:?dist: VERSION is not set}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/synapse-*.tar.gz "$out"/synapse*.deb "$out"/synapse*.ipk "$out"/synapse-*-oci.tar "$out/SHA256SUMS" "$out/SHA256SUMS.minisig" \
	"$out"/synapse-v*-linux-* "$out"/synapse-*.minisig

bins=$(mktemp -d "${TMPDIR:-/tmp}/synapse-dist.XXXXXX")
trap 'rm -rf "$bins"' EXIT
# The plain binaries of every target (no -grpc in the tarballs).
GRPC_TAGS= scripts/cross.sh "$targets" "$bins"

for bin in "$bins"/synapse-*; do
	target=${bin##*/synapse-}
	name="synapse-$version-$target"
	stage="$bins/stage/$name"
	mkdir -p "$stage"
	install -m 0755 "$bin" "$stage/synapse"
	install -m 0755 "$bin" "$out/$name"
	install -m 0644 LICENSE NOTICE README.md CHANGELOG.md build/config.example.json build/synapse.service "$stage/"
	# Reproducible: fixed owner, order and times (the commit's).
	mtime=$(git log -1 --format=%cI 2>/dev/null || echo 2026-01-01T00:00:00Z)
	tar -C "$bins/stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
		-cf - "$name" | gzip -9n >"$out/$name.tar.gz"
done

# The packages and the image, by build/pkg: a module of its own, so nfpm
# and go-containerregistry stay out of the agent's build list.
(cd build/pkg && "$go" run . -version "$version" -bin "$bins" -out "$out" -root ../..)

if [ -n "${MINISIGN_KEY:-}" ]; then
	"$go" build -o "$bins/minisign-tool" ./build/minisign
	for bin in "$out"/synapse-"$version"-*; do
		case $bin in *.tar.gz | *-oci.tar) continue ;; esac
		"$bins/minisign-tool" sign -s "$MINISIGN_KEY" -m "$bin" -t "synapse $version ${bin##*/synapse-$version-}"
	done
fi
(cd "$out" && sha256sum synapse-*.tar.gz synapse_*.deb synapse_*.ipk synapse-*-oci.tar \
	$(ls synapse-"$version"-* | grep -vE '\.tar\.gz$|-oci\.tar$|\.minisig$') >SHA256SUMS)
if [ -n "${MINISIGN_KEY:-}" ]; then
	"$bins/minisign-tool" sign -s "$MINISIGN_KEY" -m "$out/SHA256SUMS" -t "synapse $version SHA256SUMS"
	echo "dist: signed $out/SHA256SUMS.minisig and each binary's .minisig"
else
	echo "dist: SHA256SUMS and the binaries are unsigned (set MINISIGN_KEY to the release secret key to sign them)"
fi
ls -l "$out"
