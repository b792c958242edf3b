#!/usr/bin/env bash
# make test-dist (part of make test): make dist with a throwaway signing key
# into a temporary directory, then checks it as a user would: sha256sum -c
# of SHA256SUMS, minisign -V of its signature (and that a changed SHA256SUMS
# fails it), each tarball's files, and that the amd64 binary's --version is
# the VERSION it was built as; each bare binary's .minisig by minisign -V,
# and the amd64 one taken by synapse update (the release key in a config);
# then the packages (scripts/test-packages.sh:
# lintian, dpkg -i, systemd-analyze verify, purge, the .ipk's control and
# init script, the OCI layout by skopeo). Without minisign: skipped, or a
# failure when CI=true (scripts/ci-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
version=${VERSION:?test-dist: VERSION is not set}
if ! command -v minisign >/dev/null 2>&1; then
	if [ "${CI:-}" = "true" ]; then
		echo "test-dist: minisign is not installed (scripts/ci-deps.sh installs it)" >&2
		exit 1
	fi
	echo "test-dist: skipped: minisign is not installed (scripts/ci-deps.sh --install)"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/synapse-test-dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$go" run ./build/minisign keygen -p "$tmp/test.pub" -s "$tmp/test.key"
MINISIGN_KEY="$tmp/test.key" VERSION="$version" scripts/dist.sh "${TARGETS:-build/targets.txt}" "$tmp/dist"

cd "$tmp/dist"
sha256sum -c SHA256SUMS
minisign -Vm SHA256SUMS -p "$tmp/test.pub"
cp SHA256SUMS "$tmp/changed" && echo "0000  extra.tar.gz" >>"$tmp/changed"
cp SHA256SUMS.minisig "$tmp/changed.minisig"
if minisign -Vm "$tmp/changed" -p "$tmp/test.pub" >/dev/null 2>&1; then
	echo "test-dist: minisign verified a changed SHA256SUMS" >&2
	exit 1
fi
want="CHANGELOG.md LICENSE NOTICE README.md config.example.json synapse synapse.service"
n=0
for tgz in synapse-*.tar.gz; do
	base=${tgz%.tar.gz}
	got=$(tar -tzf "$tgz" | sed -n "s|^$base/||p" | grep -v '^$' | sort | tr '\n' ' ')
	if [ "$got" != "$want " ]; then
		echo "test-dist: $tgz holds '$got', want '$want'" >&2
		exit 1
	fi
	n=$((n + 1))
done
targets=$(grep -cvE '^[[:space:]]*(#|$)' "$OLDPWD/${TARGETS:-build/targets.txt}")
[ "$n" -eq "$targets" ] || { echo "test-dist: $n tarballs for $targets targets" >&2; exit 1; }
tar -xzf "synapse-$version-linux-amd64.tar.gz" -C "$tmp"
got=$("$tmp/synapse-$version-linux-amd64/synapse" --version)
case $got in
"synapse $version linux/amd64 "*) echo "test-dist: $got" ;;
*) echo "test-dist: --version printed '$got', want 'synapse $version linux/amd64 ...'" >&2; exit 1 ;;
esac
nbin=0
for bin in synapse-"$version"-*; do
	case $bin in *.tar.gz | *-oci.tar | *.minisig) continue ;; esac
	minisign -q -H -Vm "$bin" -p "$tmp/test.pub"
	nbin=$((nbin + 1))
done
[ "$nbin" -eq "$targets" ] || { echo "test-dist: $nbin signed binaries for $targets targets" >&2; exit 1; }
mkdir -p "$tmp/gw"
cp "$tmp/synapse-$version-linux-amd64/synapse" "$tmp/gw/synapse"
cp "$tmp/test.pub" "$tmp/gw/release.pub"
echo '{"update": {"release_keys_file": "release.pub"}}' >"$tmp/gw/config.json"
"$tmp/gw/synapse" update --config "$tmp/gw/config.json" --file "synapse-$version-linux-amd64"
[ -f "$tmp/gw/synapse.prev" ] || { echo "test-dist: synapse update kept no previous binary" >&2; exit 1; }
echo "test-dist: $n tarballs, $nbin signed binaries (one taken by synapse update), SHA256SUMS and its signature verified"
cd "$OLDPWD"
VERSION="$version" TARGETS="${TARGETS:-build/targets.txt}" scripts/test-packages.sh "$tmp/dist"
