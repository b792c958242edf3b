#!/usr/bin/env bash
# What one acknowledged write costs the disk, for two synapse binaries side
# by side (bench/README.md, "The commit log as the commit path"): bytes the
# agent process writes (its own write_bytes in /proc/PID/io, read 1.5 s
# after the load so the last checkpoint is counted) per sync echo task,
# per async echo task and per tier-1 frame, fsyncs per sync echo task
# (strace -f over the agent, when strace is installed: the fsyncs from
# just before the measured tasks to 1.5 s after them, so the last
# checkpoint is counted, and those of the agent's whole run, start, warm-up
# and close included, both over the measured tasks), and the rates. Every row runs on a fresh data directory; the two binaries
# take turns, row by row and round by round, so a busy machine weighs on
# both alike. Prints each run and then the medians.
#
#   scripts/measure-writes.sh [-n TASKS] [-d SECONDS] [-r ROUNDS] BEFORE AFTER
#
# BEFORE and AFTER are synapse binaries, e.g.
#   git worktree add /tmp/before main && (cd /tmp/before && go build -o /tmp/synapse-before .)
#   go build -o /tmp/synapse-after . && scripts/measure-writes.sh /tmp/synapse-before /tmp/synapse-after
set -euo pipefail

tasks=300 secs=5 rounds=2
while getopts "n:d:r:" o; do
	case $o in
	n) tasks=$OPTARG ;;
	d) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 2 ]; then
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
bins=("$1" "$2")
for b in "${bins[@]}"; do
	[ -x "$b" ] || { echo "measure-writes: $b is not an executable" >&2; exit 2; }
done
for tool in curl; do
	command -v $tool >/dev/null || { echo "measure-writes: $tool is needed" >&2; exit 2; }
done
have_strace=false
command -v strace >/dev/null && have_strace=true

work=$(mktemp -d)
agent_pid='' tracer_pid=''
stop_agent() {
	if [ -n "$agent_pid" ]; then
		kill -TERM "$agent_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$agent_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$agent_pid" 2>/dev/null || true
	fi
	if [ -n "$tracer_pid" ]; then wait "$tracer_pid" 2>/dev/null || true; fi
	agent_pid='' tracer_pid=''
}
trap 'stop_agent; rm -rf "$work"' EXIT

payload='{"task_type":"echo","payload":{"device":"sensor-0042","reading":{"temperature":21.5,"humidity":48.2,"pressure":1013.25},"tags":["north","roof","calibrated"],"note":"a payload of about two hundred bytes, as the measurement used"}}'

# start BIN DIR [trace]: the agent on a free port, under strace when
# asked and there is one (strace slows the agent: only the sync echo row
# counts fsyncs); sets agent_pid, url, token.
start() {
	local bin=$1 dir=$2 trace=${3:-}
	rm -rf "$dir" && mkdir -p "$dir" && : >"$dir.out"
	tracing=false
	if [ -n "$trace" ] && $have_strace; then tracing=true; fi
	if $tracing; then
		strace -f -e trace=fsync,fdatasync -o "$dir.strace" "$bin" serve --data "$dir/data" --listen 127.0.0.1:0 >"$dir.out" 2>&1 &
		tracer_pid=$!
	else
		"$bin" serve --data "$dir/data" --listen 127.0.0.1:0 >"$dir.out" 2>&1 &
		agent_pid=$!
	fi
	for _ in $(seq 200); do
		url=$(sed -n 's/.*msg=serving.* listen=\([^ ]*\).*/http:\/\/\1/p' "$dir.out" | head -1)
		[ -n "$url" ] && break
		sleep 0.05
	done
	[ -n "$url" ] || { echo "measure-writes: the agent did not start:" >&2; cat "$dir.out" >&2; exit 1; }
	if $tracing; then agent_pid=$(pgrep -P "$tracer_pid" | head -1); fi
	token=$(cat "$dir/data/admin.token")
}

wbytes() { awk '/^write_bytes/ {print $2}' "/proc/$agent_pid/io"; }

post() { # post QUERY: one task, one curl
	curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		-d "$payload" "$url/api/v1/synapse/task$1"
}

fsyncs() { # fsync + fdatasync calls strace has seen so far for DIR (a call
	# strace splits in two, "<unfinished ...>" and "<... resumed>", counts once)
	if $have_strace; then grep -cE '(^|[ ])f(data)?sync\(' "$1.strace" || true; else echo "-"; fi
}

per_task() { # per_task FSYNCS: FSYNCS over the measured tasks, or "-"
	awk -v f="$1" -v n="$tasks" 'BEGIN {if (f == "-") print "-"; else printf "%.2f", f / n}'
}

now() { date +%s.%N; }

# Each row prints "name value" lines.
row_sync() {
	local dir=$work/$1-sync
	start "$2" "$dir" trace
	for _ in $(seq 20); do post "?wait=5"; done
	local w0 t0 t1 w1 f0 f1
	w0=$(wbytes) t0=$(now) f0=$(fsyncs "$dir")
	for _ in $(seq "$tasks"); do post "?wait=5"; done
	t1=$(now)
	sleep 1.5
	w1=$(wbytes) f1=$(fsyncs "$dir")
	stop_agent
	echo "sync-echo-bytes/task $(((w1 - w0) / tasks))"
	if [ "$f0" = "-" ]; then
		echo "sync-echo-fsyncs/task -"
	else
		echo "sync-echo-fsyncs/task $(per_task $((f1 - f0)))"
	fi
	echo "sync-echo-fsyncs/task(run) $(per_task "$(fsyncs "$dir")")"
	echo "sync-echo-tasks/s(curl) $(awk -v a="$t0" -v b="$t1" -v n="$tasks" 'BEGIN {printf "%.0f", n / (b - a)}')"
}

row_async() {
	local dir=$work/$1-async
	start "$2" "$dir"
	for _ in $(seq 20); do post ""; done
	sleep 0.5
	local w0 w1 last
	w0=$(wbytes)
	for _ in $(seq "$tasks"); do post ""; done
	# Wait until every task is final (the agent has nothing running).
	for _ in $(seq 200); do
		last=$(curl -sf -H "Authorization: Bearer $token" "$url/api/v1/synapse/tasks?status=completed&page_size=1000" | grep -o '"task_id"' | wc -l)
		[ "$last" -ge $((tasks + 20)) ] && break
		sleep 0.1
	done
	sleep 1.5
	w1=$(wbytes)
	stop_agent
	echo "async-echo-bytes/task $(((w1 - w0) / tasks))"
}

row_tier1() { # row_tier1 TAG BIN BATCH
	local dir=$work/$1-t1-$3 out w0 w1 acked rate
	start "$2" "$dir"
	w0=$(wbytes)
	out=$("$2" tier1 send --agent "$url" --data "$dir/data" --batch "$3" --duration "${secs}s" --json)
	sleep 1.5
	w1=$(wbytes)
	stop_agent
	acked=$(echo "$out" | sed -n 's/.*"acknowledged": *\([0-9]*\).*/\1/p' | head -1)
	rate=$(echo "$out" | sed -n 's/.*"frames_per_second": *\([0-9.]*\).*/\1/p' | head -1)
	[ -n "$acked" ] && [ "$acked" -gt 0 ] || { echo "measure-writes: tier1 send: $out" >&2; exit 1; }
	echo "tier1-batch$3-bytes/frame $(((w1 - w0) / acked))"
	echo "tier1-batch$3-frames/s ${rate%.*}"
}

results=$work/results
: >"$results"
for r in $(seq "$rounds"); do
	order="0 1"
	[ $((r % 2)) -eq 0 ] && order="1 0"
	for row in sync async t1-1 t1-1000; do
		for i in $order; do
			case $row in
			sync) lines=$(row_sync "r$r-b$i" "${bins[$i]}") ;;
			async) lines=$(row_async "r$r-b$i" "${bins[$i]}") ;;
			t1-1) lines=$(row_tier1 "r$r-b$i" "${bins[$i]}" 1) ;;
			t1-1000) lines=$(row_tier1 "r$r-b$i" "${bins[$i]}" 1000) ;;
			esac
			echo "$lines" | while read -r name v; do
				echo "round $r  $(basename "${bins[$i]}")  $name $v" >&2
				echo "$i $name $v" >>"$results"
			done
		done
	done
done

echo
printf "%-26s %28s %28s\n" "row (median of $rounds rounds)" "$(basename "${bins[0]}")" "$(basename "${bins[1]}")"
for name in $(awk '{print $2}' "$results" | awk '!seen[$0]++'); do
	cells=()
	for i in 0 1; do
		cells+=("$(awk -v i="$i" -v n="$name" '$1 == i && $2 == n {print $3}' "$results" | sort -g |
			awk '{v[NR] = $1; all = all (NR > 1 ? ", " : "") $1} END {if (NR == 0) {print "-"; exit}
				m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s (%s)", m, all}')")
	done
	printf "%-26s %28s %28s\n" "$name" "${cells[0]}" "${cells[1]}"
done
