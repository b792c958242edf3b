#!/bin/sh
# walk.sh: the module's files and packages one P2P delegation passes
# through, from the requester's REST API to the executor's handler, and
# every return to a package a call chain had left (a callback).
#
#   scripts/walk.sh [-n OPS] [REF]
#
# It runs BenchmarkDelegationRoundTrip/c=1 (package peer: two agents over
# loopback HTTP, the requester's POST /task?wait=, the executor's echo
# handler) for OPS delegations (default 3000) under the CPU profiler, and
# reads every sampled call chain (go tool pprof -traces -lines). A frame
# counts when its file is in the module and is not a test file; chains
# that pass through a test file (the benchmark's setup and its client)
# are left out. Within a chain, the module packages are taken root first
# with repeats in a row folded: a package that comes again after another
# one is a return, printed as the packages between with the function and
# file the chain re-enters at. A function literal entered from another
# package (a store transaction runs the closure its caller gave it) is
# the caller's own code: the chain starts again there, and a return at
# such a closure is listed apart from the callbacks.
#
# REF (a commit) measures that tree instead, in a temporary worktree, so
# that two trees are compared with one command each. Sampling sees the
# functions a delegation spends time in: one that takes under a
# microsecond may be missed in a run, so compare trees with the same OPS.
set -eu

ops=3000
case "${1:-}" in
-n)
	case "${2:-}" in
	'' | *[!0-9]* | 0) echo "walk.sh: -n takes a positive count of delegations, not '${2:-}'" >&2; exit 2 ;;
	esac
	ops=$2; shift 2 ;;
-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
-*) echo "walk.sh: unknown option $1 (usage: scripts/walk.sh [-n OPS] [REF])" >&2; exit 2 ;;
esac
ref=${1:-}
if [ -n "$ref" ] && ! git -C "$(dirname "$0")" rev-parse --verify -q "$ref^{commit}" >/dev/null; then
	echo "walk.sh: $ref is not a commit" >&2
	exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"; if [ -n "$ref" ]; then git -C "$root" worktree remove --force "$work.tree" 2>/dev/null || true; fi' EXIT INT TERM
tree=$root
if [ -n "$ref" ]; then
	tree=$work.tree
	git -C "$root" worktree add --detach -q "$tree" "$ref"
fi

(cd "$tree" && go test -c -o "$work/peer.test" ./peer)
(cd "$work" && ./peer.test -test.run '^$' -test.bench 'DelegationRoundTrip/c=1$' \
	-test.benchtime "${ops}x" -test.cpuprofile cpu.prof >bench.txt)
grep 'DelegationRoundTrip' "$work/bench.txt" >&2 || true
go tool pprof -traces -lines "$work/peer.test" "$work/cpu.prof" 2>/dev/null >"$work/traces.txt"

awk -v tree="$tree/" '
function flush(   i, n, seq, last, pkg, seen, path, k, j, kind) {
	if (nf == 0 || test) { nf = 0; test = 0; return }
	chains++
	n = 0
	last = ""
	# pprof prints the leaf first: walk from the root.
	for (i = nf; i >= 1; i--) {
		pkg = fpkg[i]
		files[ffile[i]] = 1
		pkgs[pkg] = 1
		if (pkg == last) continue
		n++
		seq[n] = pkg
		at[n] = ffile[i]
		fn[n] = ffunc[i]
		last = pkg
	}
	for (k = 1; k <= n; k++) delete seen
	from = 1
	for (k = 1; k <= n; k++) {
		# A function literal entered from another package (a store
		# transaction runs the closure its caller gave it) is code of the
		# caller: the chain starts again there. Any other package that
		# comes again is a callback.
		closure = (k > 1 && fn[k] ~ /\.func[0-9]+(\.[0-9]+)*$/)
		if (seq[k] in seen) {
			path = ""
			for (j = seen[seq[k]]; j <= k; j++) path = path (path == "" ? "" : " -> ") seq[j]
			returns[closure ? "closures" : "callbacks", path " (" fn[k] ", " at[k] ")"]++
		}
		if (closure) {
			for (j = from; j < k; j++) delete seen[seq[j]]
			from = k
		}
		seen[seq[k]] = k
	}
	nf = 0
}
/^-----------\+/ { flush(); next }
{
	# a frame: "[time] function file:line [(inline)]"
	for (i = 1; i <= NF; i++) {
		if (index($i, tree) == 1) {
			f = substr($i, length(tree) + 1)
			sub(/:[0-9]+$/, "", f)
			if (f ~ /_test\.go$/ || f ~ /^internal\/testutil\//) { test = 1; break }
			p = f
			sub(/\/[^\/]*$/, "", p)
			if (p == f) p = "."
			nf++
			ffile[nf] = f
			fpkg[nf] = p
			g = $(i - 1)
			sub(/^.*\//, "", g)
			ffunc[nf] = g
			break
		}
	}
}
function list(kind,   r, n, key) {
	n = 0
	for (key in returns) {
		split(key, r, SUBSEP)
		if (r[1] == kind) n++
	}
	return n
}
END {
	flush()
	np = 0; for (p in pkgs) np++
	nfiles = 0; for (f in files) nfiles++
	printf "%d call chains sampled: %d files in %d packages; returns: %d callbacks, %d through closures\n", chains, nfiles, np, list("callbacks"), list("closures")
	print "packages:"
	for (p in pkgs) print "  " p | "sort"
	close("sort")
	print "files:"
	for (f in files) print "  " f | "sort"
	close("sort")
	split("callbacks closures", kinds, " ")
	for (k = 1; k <= 2; k++) {
		print "returns, " kinds[k] " (chains sampled):"
		for (key in returns) {
			split(key, r, SUBSEP)
			if (r[1] == kinds[k]) printf "  %s  %d\n", r[2], returns[key] | "sort"
		}
		close("sort")
	}
}' "$work/traces.txt"
