#!/bin/sh
# Installs synapse as a systemd service on a Linux host:
#   - creates the system user and group "synapse" (no login, no home)
#   - copies the binary to /usr/local/bin/synapse
#   - copies build/synapse.service to /etc/systemd/system/synapse.service
#   - creates /etc/synapse (for the optional synapse.env)
#   - reloads systemd; it does not enable or start the service
#
# Usage:
#   make build && sudo build/install.sh [BINARY]       (default BINARY: bin/synapse)
#   build/install.sh --dry-run [BINARY]                print the steps, change nothing
#
# Then: sudo systemctl enable --now synapse
#       sudo cat /var/lib/synapse/admin.token
#
# Re-running it upgrades the binary and the unit in place; it never touches
# the data in /var/lib/synapse. Without root it refuses to run (except
# --dry-run).
set -eu

dry=0
if [ "${1:-}" = "--dry-run" ]; then
	dry=1
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../bin/synapse}
unit=$here/synapse.service
prefix=${PREFIX:-/usr/local}

run() {
	echo "+ $*"
	if [ "$dry" -eq 0 ]; then
		"$@"
	fi
}

if [ ! -x "$bin" ]; then
	echo "install: no executable at $bin (run 'make build' first, or pass the binary)" >&2
	exit 1
fi
if ! "$bin" version >/dev/null 2>&1; then
	echo "install: $bin does not run here (built for another platform?)" >&2
	exit 1
fi
if [ "$dry" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
	echo "install: run as root (sudo $0), or with --dry-run to see the steps" >&2
	exit 1
fi

if ! getent passwd synapse >/dev/null 2>&1; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/bin/false
	run useradd --system --user-group --no-create-home --home-dir /var/lib/synapse --shell "$nologin" synapse
fi
run install -D -m 0755 "$bin" "$prefix/bin/synapse"
run install -D -m 0644 "$unit" /etc/systemd/system/synapse.service
run install -d -m 0750 -o root -g synapse /etc/synapse
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	run systemctl daemon-reload
elif [ "$dry" -eq 0 ]; then
	echo "install: systemd is not running here; the unit is installed but not loaded"
fi

if [ "$dry" -eq 1 ]; then
	echo "dry run: nothing was installed; without --dry-run these steps install $("$bin" version)"
	exit 0
fi
echo "installed $("$bin" version)"
echo "next: systemctl enable --now synapse; the admin token is then in /var/lib/synapse/admin.token"
