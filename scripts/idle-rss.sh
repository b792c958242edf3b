#!/usr/bin/env bash
# Idle memory of the agent beside mosquitto and nats-server, measured the
# same way in one run: each server starts on a free 127.0.0.1 port with an
# empty data directory, waits IDLE seconds (default 20), and its
# /proc/PID/smaps_rollup is read: Rss, the part that is pages of files
# (Pss_File: the binary and shared libraries) and the anonymous part.
#
# Then a short workload, WORK operations (default 1000; 0: none) for each
# server, one after another over one connection: an echo task round trip
# (POST /api/v1/synapse/task?wait=10) to each agent, a QoS 1 publish to
# mosquitto (persistence on), a publish to a JetStream file stream on
# nats-server; and after IDLE seconds more the same measure again.
#
# Usage: scripts/idle-rss.sh [SYNAPSE_BINARY...]   (default: builds bin/synapse)
# Several binaries (e.g. before and after a change) idle side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${IDLE:-20}
work_n=${WORK:-1000}
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

names=() ports=() tokens=()
for i in "${!bins[@]}"; do
	name=synapse
	[ ${#bins[@]} -eq 1 ] || name=$(basename "${bins[$i]}")
	p=$(port) tok="idle-rss-$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")"
	SYNAPSE_ADMIN_TOKEN="$tok" "${bins[$i]}" serve --data "$work/synapse$i" --listen "127.0.0.1:$p" --log-level warn >"$work/synapse$i.log" 2>&1 &
	pids+=($!) names+=("$name") ports+=("$p") tokens+=("$tok")
done
mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
if [ -x "$mosq" ]; then
	mkdir -p "$work/mosquitto"
	p=$(port)
	printf 'listener %s 127.0.0.1\npersistence true\npersistence_location %s/\nallow_anonymous true\n' "$p" "$work/mosquitto" >"$work/mosquitto.conf"
	"$mosq" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 &
	pids+=($!) names+=(mosquitto) ports+=("$p") tokens+=("")
fi
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
if [ -x "$nats" ]; then
	p=$(port)
	"$nats" -js -sd "$work/nats" -a 127.0.0.1 -p "$p" >"$work/nats.log" 2>&1 &
	pids+=($!) names+=(nats-server) ports+=("$p") tokens+=("")
fi
measure() {
	printf '%-16s %9s %9s %9s %9s   (kB, %s)\n' process Rss Rss_File Pss_File Anonymous "$1"
	for i in "${!pids[@]}"; do
		f=/proc/${pids[$i]}/smaps_rollup
		[ -r "$f" ] || { echo "${names[$i]}: not running"; continue; }
		# Rss_File: Rss less the anonymous pages (the file pages, counted whole
		# even when shared); Pss_File shares them among the processes using them.
		awk -v n="${names[$i]}" '/^Rss:/{r=$2} /^Pss_File:/{pf=$2} /^Anonymous:/{a=$2}
			END { printf "%-16s %9d %9d %9d %9d\n", n, r, r - a, pf, a }' "$f"
	done
}

# workload I: WORK operations on server I, over one connection; prints
# how many succeeded.
workload() {
	local i=$1 n=$work_n p=${ports[$1]}
	case ${names[$i]} in
	mosquitto)
		seq "$n" | mosquitto_pub -h 127.0.0.1 -p "$p" -t idle/rss -q 1 -l && echo "$n"
		;;
	nats-server)
		python3 - "$p" "$n" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
f.readline()  # INFO
create = b'{"name":"IDLE","subjects":["idle.>"],"storage":"file"}'
s.sendall(b'CONNECT {"verbose":false}\r\nSUB _INBOX.idle 1\r\n')
s.sendall(b"PUB $JS.API.STREAM.CREATE.IDLE _INBOX.idle %d\r\n%s\r\n" % (len(create), create))
for _ in range(n):
    s.sendall(b"PUB idle.rss _INBOX.idle 2\r\nhi\r\n")
s.settimeout(30)
acks = 0
while acks < n:  # every publish is acknowledged once stored
    line = f.readline()
    if not line:
        break
    if line.startswith(b"PING"):
        s.sendall(b"PONG\r\n")
    if line.startswith(b"MSG"):
        body = f.read(int(line.split()[-1]) + 2)
        acks += b'"seq"' in body
print(acks)
PY
		;;
	*)
		local cfg=$work/curl$i
		for _ in $(seq "$n"); do
			printf 'url = "http://127.0.0.1:%s/api/v1/synapse/task?wait=10"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = "{\\"task_type\\":\\"echo\\",\\"payload\\":{\\"n\\":1}}"\noutput = /dev/null\nwrite-out = "%%{http_code}\\n"\nnext\n' "$p" "${tokens[$i]}"
		done | head -n -1 >"$cfg" # no "next" after the last
		curl -s -K "$cfg" | grep -c '^200$' || true
		;;
	esac
}

sleep "$idle"
measure "after ${idle}s idle"
[ "$work_n" -gt 0 ] || exit 0
echo
for i in "${!pids[@]}"; do
	printf '%-16s %s of %s operations done\n' "${names[$i]}" "$(workload "$i")" "$work_n"
done
sleep "$idle"
measure "after the workload, then ${idle}s idle"
