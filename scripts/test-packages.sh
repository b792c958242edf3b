#!/usr/bin/env bash
# Checks the packages and the image of make dist in DIST_DIR (test-dist
# calls it):
#   .deb  lintian reports no error; the amd64 one is installed with dpkg -i
#         (root only, and only where no synapse package is installed
#         already): synapse --version, the conffile, the user, the data
#         directory, systemd-analyze verify of the installed unit; then
#         dpkg --purge, after which the data, /etc/synapse and the user are gone
#   .ipk  unpacked: its control file, conffiles and procd init script
#   OCI   skopeo inspect: an index over every target, each image run as
#         65532:65532 with /synapse as its entrypoint
# A missing tool is a skip with its reason, or a failure when CI=true.
set -euo pipefail
dist=${1:?usage: test-packages.sh DIST_DIR}
version=${VERSION:?test-packages: VERSION is not set}
targets_file=${TARGETS:-build/targets.txt}
cd "$(dirname "$0")/.."
debver=${version#v}
debver=${debver/-/\~}

need() {
	if command -v "$1" >/dev/null 2>&1; then return 0; fi
	if [ "${CI:-}" = "true" ]; then
		echo "test-packages: $1 is not installed (scripts/ci-deps.sh installs it)" >&2
		exit 1
	fi
	echo "test-packages: $2 skipped: $1 is not installed (scripts/ci-deps.sh --install)"
	return 1
}
fail() { echo "test-packages: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/synapse-test-pkg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

debs=("$dist"/synapse_*.deb)
[ "${#debs[@]}" -eq 3 ] || fail "want 3 .deb files, found ${#debs[@]}"
for arch in amd64 arm64 armhf; do
	[ -f "$dist/synapse_${debver}_$arch.deb" ] || fail "no synapse_${debver}_$arch.deb"
done
if need lintian "lintian of the .deb files"; then
	for deb in "${debs[@]}"; do
		if ! report=$(lintian --fail-on error --tag-display-limit 0 "$deb" 2>&1); then
			echo "$report" >&2
			fail "lintian reports an error on $deb"
		fi
		echo "$report" | grep -v 'running with root privileges' || true
	done
	echo "test-packages: lintian: no errors on ${#debs[@]} .deb files"
fi

if [ "$(id -u)" -ne 0 ] || ! command -v dpkg >/dev/null 2>&1; then
	[ "${CI:-}" = "true" ] && fail "dpkg -i needs root and dpkg"
	echo "test-packages: dpkg -i skipped: not root, or no dpkg"
elif dpkg -s synapse >/dev/null 2>&1 && [ "${CI:-}" != "true" ]; then
	echo "test-packages: dpkg -i skipped: a synapse package is installed on this machine already"
else
	deb="$dist/synapse_${debver}_amd64.deb"
	trap 'dpkg --purge synapse >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
	dpkg -i "$deb" >/dev/null
	got=$(synapse --version)
	case $got in "synapse $version linux/amd64 "*) ;; *) fail "installed synapse --version: '$got'" ;; esac
	dpkg-query -W -f='${Conffiles}\n' synapse | grep -q '/etc/synapse/config.json' || fail "/etc/synapse/config.json is no conffile"
	getent passwd synapse >/dev/null || fail "no system user synapse after install"
	[ "$(stat -c %U:%a /var/lib/synapse)" = "synapse:700" ] || fail "/var/lib/synapse is $(stat -c %U:%a /var/lib/synapse)"
	if need systemd-analyze "systemd-analyze verify"; then
		systemd-analyze verify /lib/systemd/system/synapse.service || fail "systemd-analyze verify failed"
		grep -q '^ProtectSystem=strict' /lib/systemd/system/synapse.service || fail "the installed unit is not the hardened one"
	fi
	echo "test-packages: dpkg -i: $got; unit verified"
	dpkg --purge synapse >/dev/null
	[ ! -e /var/lib/synapse ] || fail "/var/lib/synapse is left after purge"
	[ ! -e /etc/synapse ] || fail "/etc/synapse is left after purge"
	! getent passwd synapse >/dev/null || fail "the user synapse is left after purge"
	echo "test-packages: purged: no data, configuration or user left"
fi

for arch in mipsel_24kc mips_24kc; do
	ipk="$dist/synapse_${debver}_$arch.ipk"
	[ -f "$ipk" ] || fail "no $ipk"
	d="$tmp/$arch"
	mkdir -p "$d/control" "$d/data"
	tar -xzf "$ipk" -C "$d"
	[ "$(cat "$d/debian-binary")" = "2.0" ] || fail "$ipk: debian-binary is not 2.0"
	tar -xzf "$d/control.tar.gz" -C "$d/control"
	tar -xzf "$d/data.tar.gz" -C "$d/data"
	grep -qx 'Package: synapse' "$d/control/control" || fail "$ipk: control has no Package: synapse"
	grep -qx "Architecture: $arch" "$d/control/control" || fail "$ipk: control has no Architecture: $arch"
	grep -qx "Version: $debver" "$d/control/control" || fail "$ipk: control has no Version: $debver"
	grep -qx '/etc/synapse/config.json' "$d/control/conffiles" || fail "$ipk: config.json is no conffile"
	init="$d/data/etc/init.d/synapse"
	[ -x "$init" ] || fail "$ipk: no executable /etc/init.d/synapse"
	head -1 "$init" | grep -qx '#!/bin/sh /etc/rc.common' || fail "$ipk: the init script is not an rc.common script"
	grep -qx 'USE_PROCD=1' "$init" && grep -q 'procd_set_param command /usr/bin/synapse serve' "$init" ||
		fail "$ipk: the init script does not run synapse under procd"
	sh -n "$init" || fail "$ipk: the init script does not parse"
	[ -x "$d/data/usr/bin/synapse" ] || fail "$ipk: no /usr/bin/synapse"
done
echo "test-packages: .ipk: control, conffiles and procd init script checked"

oci="$dist/synapse-$version-oci.tar"
[ -f "$oci" ] || fail "no $oci"
if need skopeo "the OCI layout check"; then
	mkdir -p "$tmp/oci"
	tar -xf "$oci" -C "$tmp/oci"
	ref="oci:$tmp/oci:$version"
	raw=$(skopeo inspect --raw "$ref")
	ntargets=$(grep -cvE '^[[:space:]]*(#|$)' "$targets_file")
	n=$(jq '[.manifests[] | select(.platform.os == "linux")] | length' <<<"$raw")
	[ "$(jq -r .mediaType <<<"$raw")" = application/vnd.oci.image.index.v1+json ] || fail "the layout's image is no OCI index"
	[ "$n" -eq "$ntargets" ] || fail "the index has $n images for $ntargets targets"
	for plat in $(jq -r '.manifests[].platform | .architecture + "/" + (.variant // "")' <<<"$raw"); do
		arch=${plat%/*} variant=${plat#*/}
		cfg=$(skopeo inspect --config --override-os linux --override-arch "$arch" ${variant:+--override-variant "$variant"} "$ref")
		[ "$(jq -r .architecture <<<"$cfg")" = "$arch" ] || fail "$plat: the image's config says $(jq -r .architecture <<<"$cfg")"
		[ "$(jq -r .config.User <<<"$cfg")" = 65532:65532 ] || fail "$plat: the image runs as '$(jq -r .config.User <<<"$cfg")'"
		[ "$(jq -r '.config.Entrypoint[0]' <<<"$cfg")" = /synapse ] || fail "$plat: the entrypoint is not /synapse"
		[ "$(jq '.rootfs.diff_ids | length' <<<"$cfg")" -eq 1 ] || fail "$plat: not one layer on scratch"
	done
	# As the README tells users to push it: skopeo copy of the archive, every platform.
	skopeo copy -q --all "oci-archive:$oci:$version" "oci:$tmp/copy:$version" >/dev/null
	[ "$(skopeo inspect --raw "oci:$tmp/copy:$version" | jq '.manifests | length')" -eq "$n" ] ||
		fail "skopeo copy --all of the archive did not keep $n images"
	echo "test-packages: OCI layout: an index over $n images, each one layer FROM scratch, run as 65532:65532"
fi
