#!/usr/bin/env bash
# Installs the system packages that the test targets need on a Debian or
# Ubuntu machine that has only Go, gcc, git, make and curl:
#   qemu-user-static  runs the linux/arm64 and linux/arm tests (make test-arm64, test-arm)
#                     and the byte-layout subset as armv6, mipsle, mips, riscv64 (make test-newarch)
#   mosquitto, nats-server  the engines of make bench-tier1 (its smoke mode is in make test)
#   gcc               the race detector needs cgo (make test)
#   chromium          the web console's browser test (httpapi), headless
#   sslscan           the TLS scan of the agent (e2e/tls_scan_test.go)
#   libnss3-tools     certutil: the console over TLS trusts a test CA in Chromium (httpapi)
#   jq                the README tour (e2e/readme_tour_test.go) runs as written;
#                     make test-dist reads the OCI index with it
#   minisign          make test-dist verifies SHA256SUMS.minisig with it
#   lintian           make test-dist checks the .deb files with it
#   skopeo            make test-dist inspects the OCI layout with it
#   systemd           systemd-analyze verify of the unit the .deb installs
#   nodejs, npm       the standard clients of e2e/stdclients_test.go (and make
#                     test-a2a); the script then runs npm ci in e2e/stdclients,
#                     which installs the npm packages its package-lock.json pins
#                     (eventsource, @msgpack/msgpack)
#   strace            the disk fault tests inject EIO into the agent's fsyncs with it (e2e/fault_*_test.go)
# It installs only when CI=true or when called with --install; otherwise it
# says what is missing. Idempotent and quiet: nothing happens when all is
# there.
set -euo pipefail

missing=()
if ! command -v qemu-aarch64-static >/dev/null 2>&1 && ! command -v qemu-aarch64 >/dev/null 2>&1; then
	missing+=(qemu-user-static)
fi
if ! command -v qemu-arm-static >/dev/null 2>&1 && ! command -v qemu-arm >/dev/null 2>&1; then
	[[ " ${missing[*]} " == *" qemu-user-static "* ]] || missing+=(qemu-user-static)
fi
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
for engine in mosquitto nats-server; do
	command -v "$engine" >/dev/null 2>&1 || [ -x "/usr/sbin/$engine" ] || missing+=("$engine")
done
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v sslscan >/dev/null 2>&1 || missing+=(sslscan)
command -v certutil >/dev/null 2>&1 || missing+=(libnss3-tools)
for tool in minisign lintian skopeo; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
	missing+=(chromium)
fi
# The pinned npm packages of the standard-client tests, installed from
# the lock file (npm ci: exact versions, integrity checked).
stdclients="$(cd "$(dirname "$0")/.." && pwd)/e2e/stdclients"
npm_missing=""
for pkg in eventsource @msgpack/msgpack; do
	[ -f "$stdclients/node_modules/$pkg/package.json" ] || npm_missing="yes"
done
npm_ci() {
	[ -n "$npm_missing" ] || return 0
	echo "ci-deps: npm ci in e2e/stdclients"
	(cd "$stdclients" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}
# The disk fault tests attach strace to an agent the test started (a
# sibling, not a child, of strace): Yama's ptrace_scope 1 forbids that.
# On CI only, it is lowered to 0 (classic ptrace permissions).
scope=/proc/sys/kernel/yama/ptrace_scope
if [ "${CI:-}" = "true" ] && [ -r "$scope" ] && [ "$(cat "$scope")" = "1" ]; then
	if [ "$(id -u)" -eq 0 ]; then
		{ echo 0 >"$scope"; } 2>/dev/null || echo "ci-deps: cannot lower $scope; the strace fault tests will fail" >&2
	elif command -v sudo >/dev/null 2>&1; then
		echo 0 | sudo -n tee "$scope" >/dev/null 2>&1 || echo "ci-deps: cannot lower $scope; the strace fault tests will fail" >&2
	fi
fi

if [ "${#missing[@]}" -eq 0 ] && [ -z "$npm_missing" ]; then
	exit 0
fi
if [ "${CI:-}" != "true" ] && [ "${1:-}" != "--install" ]; then
	[ "${#missing[@]}" -eq 0 ] || echo "ci-deps: missing ${missing[*]}; run 'scripts/ci-deps.sh --install' (needs root) to install them"
	[ -z "$npm_missing" ] || echo "ci-deps: missing the npm packages of e2e/stdclients; run 'scripts/ci-deps.sh --install' (or npm ci there)"
	exit 0
fi
if [ "${#missing[@]}" -eq 0 ]; then
	npm_ci
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ci-deps: missing ${missing[*]} and no apt-get to install them" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "ci-deps: installing ${missing[*]} needs root" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi

export DEBIAN_FRONTEND=noninteractive
echo "ci-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq >/dev/null
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
	# Newer releases ship the static emulators in qemu-user.
	alt=("${missing[@]/qemu-user-static/qemu-user}")
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${alt[@]}" >/dev/null
fi
npm_ci
