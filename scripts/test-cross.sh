#!/usr/bin/env bash
# Runs the test suite as linux/GOARCH under the qemu user-mode emulator:
# scripts/test-cross.sh arm64, scripts/test-cross.sh arm 7, or
# scripts/test-cross.sh mips softfloat. PKGS (default ./...) narrows it to
# a focused subset, as make test does for the targets added last (their
# byte layouts: wire, tier1, store, negotiate, peer/batch, with their fuzz
# corpora replayed as seeds).
# Tests that start the agent binary run it under the same emulator
# (SYNAPSE_TEST_EMULATOR); the e2e package, which starts and kills several
# agents at once, says it is skipped. Without qemu: skipped, or a failure
# when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
arch=${1:?usage: test-cross.sh GOARCH [GOARM|GOMIPS]}
goarm=${2:-}
gomips=
pkgs=${PKGS:-./...}
case $arch in
arm64) emu=qemu-aarch64 ;;
arm) emu=qemu-arm ;;
mips) emu=qemu-mips gomips=${goarm:-softfloat} goarm= ;;
mipsle) emu=qemu-mipsel gomips=${goarm:-softfloat} goarm= ;;
riscv64) emu=qemu-riscv64 ;;
*) echo "test-cross: no emulator known for $arch" >&2; exit 1 ;;
esac
qemu=$(command -v "$emu-static" 2>/dev/null || command -v "$emu" 2>/dev/null || true)
if [ -z "$qemu" ]; then
	if [ "${CI:-}" = "true" ]; then
		echo "test-cross: $emu-static is not installed (scripts/ci-deps.sh installs qemu-user-static)" >&2
		exit 1
	fi
	echo "test-cross: linux/$arch skipped: $emu-static is not installed (scripts/ci-deps.sh --install)"
	exit 0
fi
echo "GOARCH=$arch${goarm:+ GOARM=$goarm}${gomips:+ GOMIPS=$gomips} $go test -exec $qemu $pkgs"
# shellcheck disable=SC2086 # pkgs is a list of patterns
GOOS=linux GOARCH=$arch GOARM=$goarm GOMIPS=$gomips CGO_ENABLED=0 SYNAPSE_TEST_EMULATOR=$qemu \
	"$go" test -exec "$qemu" -count=1 -timeout 30m $pkgs
