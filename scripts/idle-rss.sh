#!/usr/bin/env bash
# Idle memory of the agent beside mosquitto and nats-server, measured the
# same way in one run: each server starts on a free 127.0.0.1 port with an
# empty data directory, waits IDLE seconds (default 20), and its
# /proc/PID/smaps_rollup is read: Rss, the part that is pages of files
# (Pss_File: the binary and shared libraries) and the anonymous part.
#
# Usage: scripts/idle-rss.sh [SYNAPSE_BINARY...]   (default: builds bin/synapse)
# Several binaries (e.g. before and after a change) idle side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${IDLE:-20}
bins=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/idle-rss.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
if [ ${#bins[@]} -eq 0 ]; then
	make --no-print-directory build >/dev/null
	bins=(bin/synapse)
fi
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

names=()
for i in "${!bins[@]}"; do
	name=synapse
	[ ${#bins[@]} -eq 1 ] || name=$(basename "${bins[$i]}")
	SYNAPSE_ADMIN_TOKEN="idle-rss-$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")" "${bins[$i]}" serve --data "$work/synapse$i" --listen "127.0.0.1:$(port)" --log-level warn >"$work/synapse$i.log" 2>&1 &
	pids+=($!) names+=("$name")
done
mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
if [ -x "$mosq" ]; then
	mkdir -p "$work/mosquitto"
	printf 'listener %s 127.0.0.1\npersistence true\npersistence_location %s/\nallow_anonymous true\n' "$(port)" "$work/mosquitto" >"$work/mosquitto.conf"
	"$mosq" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 &
	pids+=($!) names+=(mosquitto)
fi
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
if [ -x "$nats" ]; then
	"$nats" -js -sd "$work/nats" -a 127.0.0.1 -p "$(port)" >"$work/nats.log" 2>&1 &
	pids+=($!) names+=(nats-server)
fi
sleep "$idle"
printf '%-16s %9s %9s %9s %9s   (kB, after %ss idle)\n' process Rss Rss_File Pss_File Anonymous "$idle"
for i in "${!pids[@]}"; do
	f=/proc/${pids[$i]}/smaps_rollup
	[ -r "$f" ] || { echo "${names[$i]}: not running"; continue; }
	# Rss_File: Rss less the anonymous pages (the file pages, counted whole
	# even when shared); Pss_File shares them among the processes using them.
	awk -v n="${names[$i]}" '/^Rss:/{r=$2} /^Pss_File:/{pf=$2} /^Anonymous:/{a=$2}
		END { printf "%-16s %9d %9d %9d %9d\n", n, r, r - a, pf, a }' "$f"
done
