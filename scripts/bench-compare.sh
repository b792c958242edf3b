#!/usr/bin/env bash
# Runs the Go benchmarks of two trees in alternating rounds and compares
# them (make bench-compare BEFORE=<git ref>).
#
# On a shared or noisy machine only figures measured in one session, before
# and after in turns, are comparable: this builds the test binaries of every
# benchmark package once per tree (BEFORE, checked out into a temporary
# worktree, and the working tree), then runs ROUNDS rounds; odd rounds run
# BEFORE first, even rounds the working tree first. benchstat prints the
# medians and the change of every metric (ns/op, allocs/op and the custom
# ones such as rt/s and tasks/s).
#
#   BEFORE     git ref to compare against (required)
#   ROUNDS     alternating rounds (default 3)
#   BENCHTIME  -test.benchtime per benchmark (default 1s)
#   BENCH      -test.bench regexp (default .)
#   OUT        directory for before.txt and after.txt (default
#              bench/results/compare-<UTC date-time>)
#
# Bounded: each test binary runs with -test.timeout 10m.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
BEFORE="${BEFORE:-}"
ROUNDS="${ROUNDS:-3}"
BENCHTIME="${BENCHTIME:-1s}"
BENCH="${BENCH:-.}"
OUT="${OUT:-$ROOT/bench/results/compare-$(date -u +%Y%m%dT%H%M%SZ)}"
# benchstat from golang.org/x/perf, pinned; BENCHSTAT overrides the command.
BENCHSTAT="${BENCHSTAT:-$GO run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}"

say() { echo "bench-compare: $*" >&2; }

if [ -z "$BEFORE" ]; then
  say "usage: make bench-compare BEFORE=<git ref> [ROUNDS=3] [BENCHTIME=1s] [BENCH=regexp]"
  exit 2
fi
case "$ROUNDS" in '' | *[!0-9]* | 0)
  say "ROUNDS must be a positive number, not \"$ROUNDS\""
  exit 2
  ;;
esac
if ! rev="$(git -C "$ROOT" rev-parse --verify --quiet "$BEFORE^{commit}")"; then
  say "BEFORE=$BEFORE is not a commit of this repository"
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")"
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/before-tree" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say "checking out $BEFORE ($(git -C "$ROOT" rev-parse --short "$rev")) into a temporary worktree"
git -C "$ROOT" worktree add --detach "$WORK/before-tree" "$rev" >/dev/null 2>&1

mapfile -t pkgs < <("$ROOT/scripts/list-bench-pkgs.sh")
if [ "${#pkgs[@]}" -eq 0 ]; then
  say "no benchmarks"
  exit 0
fi

# build TREE NAME compiles every benchmark package that TREE has into
# $WORK/NAME/, one test binary per package.
build() {
  local tree="$1" name="$2" pkg bin
  mkdir -p "$WORK/$name"
  for pkg in "${pkgs[@]}"; do
    [ -d "$tree/$pkg" ] || continue
    bin="$WORK/$name/$(echo "${pkg#./}" | tr / _).test"
    (cd "$tree" && "$GO" test -c -o "$bin" "$pkg")
  done
}
say "building the test binaries of ${#pkgs[@]} packages, twice"
build "$WORK/before-tree" before
build "$ROOT" after

mkdir -p "$OUT"
: >"$OUT/before.txt"
: >"$OUT/after.txt"

# run TREE NAME runs every test binary of NAME in its package's directory
# of TREE (tests read testdata/ relative to it), appending to NAME.txt.
run() {
  local tree="$1" name="$2" pkg bin
  for pkg in "${pkgs[@]}"; do
    bin="$WORK/$name/$(echo "${pkg#./}" | tr / _).test"
    [ -x "$bin" ] || continue
    if ! (cd "$tree/$pkg" && "$bin" -test.run '^$' -test.bench "$BENCH" -test.benchmem \
      -test.benchtime "$BENCHTIME" -test.timeout 10m) >>"$OUT/$name.txt"; then
      say "$pkg of $name failed (its output is in $OUT/$name.txt)"
      failed=1
    fi
  done
}
failed=0

for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2 == 1)); then order="before after"; else order="after before"; fi
  for name in $order; do
    say "round $r/$ROUNDS: $name"
    if [ "$name" = before ]; then run "$WORK/before-tree" before; else run "$ROOT" after; fi
  done
done

say "raw results in $OUT"
cd "$OUT"
$BENCHSTAT before.txt after.txt | tee benchstat.txt
exit "$failed"
