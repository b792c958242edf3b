#!/usr/bin/env bash
# Side-by-side tier-1 ingest benchmark (make bench-tier1).
#
# Installs mosquitto and nats-server with apt-get when they are missing (as
# root; otherwise says what to install and leaves those engines out), builds
# the agent and the harness, starts the agent, mosquitto and nats-server on
# free 127.0.0.1 ports with their data in one temporary directory, runs the
# harness (extra flags from $BENCH_ARGS), stops everything and prints the
# table. The raw numbers go to bench/results/tier1-<UTC date-time>.json.
#
# Bounded: each run has the harness's -timeout (2m), the whole harness
# $BENCH_TIMEOUT (default 30m).
#
# BENCH_SMOKE=1 (make bench-tier1-smoke, part of make test) is the short
# mode that proves the harness works from a clean clone: a few thousand
# frames, one round, every engine required, the JSON kept out of
# bench/results; it also runs the fleet mode briefly.
#
# SYNAPSE_BIN=path runs that agent binary instead of building one (the
# harness is still built from this tree): before/after pairs.
# SYNAPSE_CONFIG=file starts the agent with that config file (a memory
# budget, say: {"limits": {"memory_mb": 32}}).
#
# BENCH_FLEET=1 (make bench-mqtt) runs the harness's fleet mode instead:
# MQTT vs HTTP between agent processes and a mosquitto the harness starts
# itself (only mosquitto is needed); the raw numbers go to
# bench/results/fleet-<UTC date-time>.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GO="${GO:-go}"
BENCH_ARGS="${BENCH_ARGS:-}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-30m}"
SMOKE="${BENCH_SMOKE:-}"
FLEET="${BENCH_FLEET:-}"
if [ -n "$SMOKE" ]; then
  BENCH_ARGS="-frames 4000 -batch 500 -single 1000 -rounds 1 -timeout 1m $BENCH_ARGS"
  BENCH_TIMEOUT=5m
fi

say() { echo "bench-tier1: $*" >&2; }
# fleet_logs prints the end of each fleet process's log.
fleet_logs() {
  local log
  for log in "$WORK"/fleet/*.log; do
    [ -s "$log" ] || continue
    say "last lines of $(basename "$log"):"
    tail -n 5 "$log" >&2
  done
}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/bench-tier1.XXXXXX")"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---- engines to install ----

apt_updated=0
# need PACKAGE BINARY: prints the binary's path when present or installed.
need() {
  local pkg="$1" bin="$2" path
  path="$(command -v "$bin" 2>/dev/null || true)"
  [ -z "$path" ] && [ -x "/usr/sbin/$bin" ] && path="/usr/sbin/$bin"
  if [ -n "$path" ]; then echo "$path"; return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "$bin is not installed: install the Debian package '$pkg' (apt-get install $pkg) to include it; leaving it out"
    return 0
  fi
  say "installing $pkg"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >"$WORK/apt.log" 2>&1; then
    if [ "$apt_updated" = 0 ]; then
      apt_updated=1
      apt-get update -qq >>"$WORK/apt.log" 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >>"$WORK/apt.log" 2>&1 || true
    fi
  fi
  path="$(command -v "$bin" 2>/dev/null || true)"
  [ -z "$path" ] && [ -x "/usr/sbin/$bin" ] && path="/usr/sbin/$bin"
  if [ -z "$path" ]; then
    say "could not install $pkg (see below); leaving it out"
    tail -n 5 "$WORK/apt.log" >&2 || true
  fi
  echo "$path"
}

MOSQUITTO="$(need mosquitto mosquitto)"
if [ -n "$FLEET" ] && [ -z "$SMOKE" ]; then
  if [ -z "$MOSQUITTO" ]; then
    say "the fleet mode needs mosquitto"
    exit 1
  fi
  say "building synapse and the harness"
  (cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/synapse" .)
  (cd "$ROOT/bench/tier1" && "$GO" build -o "$WORK/tier1bench" .)
  mkdir -p "$ROOT/bench/results" "$WORK/fleet"
  OUT="$ROOT/bench/results/fleet-$(date -u +%Y%m%dT%H%M%SZ).json"
  say "running the fleet mode (its processes' logs and data are in $WORK/fleet)"
  status=0
  # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
  timeout --kill-after=10s "$BENCH_TIMEOUT" "$WORK/tier1bench" -fleet -synapse-bin "$WORK/synapse" \
    -mosquitto-bin "$MOSQUITTO" -dir "$WORK/fleet" -out "$OUT" $BENCH_ARGS || status=$?
  [ "$status" = 0 ] || fleet_logs
  exit "$status"
fi
NATS="$(need nats-server nats-server)"
if [ -n "$SMOKE" ] && { [ -z "$MOSQUITTO" ] || [ -z "$NATS" ]; }; then
  if [ "${CI:-}" = "true" ]; then
    say "smoke mode needs mosquitto and nats-server (scripts/ci-deps.sh installs them)"
    exit 1
  fi
  say "smoke mode skipped: it needs mosquitto and nats-server (scripts/ci-deps.sh --install)"
  exit 0
fi

# ---- build ----

if [ -n "${SYNAPSE_BIN:-}" ]; then
  # Another build of the agent (before/after comparisons), same harness.
  say "building the harness; the agent is $SYNAPSE_BIN"
  cp "$SYNAPSE_BIN" "$WORK/synapse"
else
  say "building synapse and the harness"
  (cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/synapse" .)
fi
if ! (cd "$ROOT/bench/tier1" && "$GO" build -o "$WORK/tier1bench" .); then
  say "the harness does not build; if the agent's dependencies changed, run: cd bench/tier1 && go mod tidy"
  exit 1
fi

mapfile -t PORTS < <("$WORK/tier1bench" -free-ports 3)
SYN_PORT="${PORTS[0]}" MQTT_PORT="${PORTS[1]}" NATS_PORT="${PORTS[2]}"
ARGS=()
VERSIONS="synapse=$(cd "$ROOT" && git describe --tags --always --dirty 2>/dev/null || echo dev)"

# ---- start ----

SYNAPSE_ADMIN_TOKEN="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export SYNAPSE_ADMIN_TOKEN
SYN_CONFIG=()
if [ -n "${SYNAPSE_CONFIG:-}" ]; then SYN_CONFIG=(--config "$SYNAPSE_CONFIG"); fi
"$WORK/synapse" serve --data "$WORK/synapse-data" --listen "127.0.0.1:$SYN_PORT" --log-level warn "${SYN_CONFIG[@]}" \
  >"$WORK/synapse.log" 2>&1 &
PIDS+=("$!")
ARGS+=(-synapse "127.0.0.1:$SYN_PORT" -synapse-pid "$!")

if [ -n "$MOSQUITTO" ]; then
  mkdir -p "$WORK/mosquitto"
  cat >"$WORK/mosquitto.conf" <<EOF
listener $MQTT_PORT 127.0.0.1
persistence true
persistence_location $WORK/mosquitto/
allow_anonymous true
EOF
  "$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
  PIDS+=("$!")
  ARGS+=(-mqtt "127.0.0.1:$MQTT_PORT" -mqtt-pid "$!")
  VERSIONS+=",mosquitto=$({ "$MOSQUITTO" -h 2>/dev/null || true; } | sed -n 's/^mosquitto version \([^ ]*\).*/\1/p' | head -n1)"
fi

if [ -n "$NATS" ]; then
  mkdir -p "$WORK/nats"
  "$NATS" -js -sd "$WORK/nats" -a 127.0.0.1 -p "$NATS_PORT" >"$WORK/nats.log" 2>&1 &
  PIDS+=("$!")
  ARGS+=(-nats "127.0.0.1:$NATS_PORT" -nats-pid "$!")
  VERSIONS+=",nats-server=$({ "$NATS" --version 2>/dev/null || true; } | sed -n 's/.*v\([0-9][0-9.]*\).*/\1/p' | head -n1)"
fi

# ---- run ----

if [ -n "$SMOKE" ]; then
  OUT="$WORK/tier1-smoke.json"
else
  mkdir -p "$ROOT/bench/results"
  OUT="$ROOT/bench/results/tier1-$(date -u +%Y%m%dT%H%M%SZ).json"
fi
say "running (the servers' data is in $WORK; engines: ${VERSIONS//,/, })"
status=0
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
timeout --kill-after=10s "$BENCH_TIMEOUT" "$WORK/tier1bench" "${ARGS[@]}" -dir "$WORK" -out "$OUT" \
  -versions "$VERSIONS" $BENCH_ARGS || status=$?
if [ "$status" != 0 ]; then
  for log in synapse mosquitto nats; do
    if [ -s "$WORK/$log.log" ]; then
      say "last lines of the $log log:"
      tail -n 10 "$WORK/$log.log" >&2
    fi
  done
  exit "$status"
fi

if [ -n "$SMOKE" ]; then
  # The fleet mode, briefly: mosquitto and eight agents, one round.
  mkdir -p "$WORK/fleet"
  say "fleet mode, short"
  timeout --kill-after=10s 3m "$WORK/tier1bench" -fleet -synapse-bin "$WORK/synapse" -mosquitto-bin "$MOSQUITTO" \
    -dir "$WORK/fleet" -out "$WORK/fleet-smoke.json" -rounds 1 -nb-run 10 -delegations 10 -run-time 1s \
    -timeout 1m || { status=$?; fleet_logs; exit "$status"; }
fi
