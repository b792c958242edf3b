#!/usr/bin/env bash
# Compares what two trees answer, byte for byte (make compare-answers
# BEFORE=<git ref>): the help, usage and errors of every command and verb
# of the command line, config check on good and bad files, and a running
# agent's answers to the command line and to raw HTTP requests.
#
# A restructuring must change none of it (issue 31, as issue 16 before
# it). This builds bin/synapse of BEFORE (a temporary worktree) and of the
# working tree, runs the same command lines against each (each binary
# serves its own fresh data directory on its own port), and diffs the
# transcripts after masking what differs between any two runs: task and
# message ids, times, durations, the agent's random id suffix, keys and
# fingerprints, token ids and secrets, ports, the temporary directory, the
# version string, and the store's counters that depend on how commits
# group (group commits, fsyncs, log bytes and records).
#
#   BEFORE  git ref to compare against (required)
#   OUT     directory for before.txt, after.txt and diff.txt (default: a
#           temporary one, removed at the end unless the answers differ)
#
# Needs go, git, curl and timeout.
#
# It prints how many command lines it ran and how many answers differ,
# and exits 1 when one does. Bounded: every command runs with a 20 s
# time limit, the agents are stopped at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
BEFORE="${BEFORE:-}"

say() { echo "compare-answers: $*" >&2; }

if [ -z "$BEFORE" ]; then
  say "usage: make compare-answers BEFORE=<git ref> [OUT=dir]"
  exit 2
fi
if ! rev="$(git -C "$ROOT" rev-parse --verify --quiet "$BEFORE^{commit}")"; then
  say "BEFORE=$BEFORE is not a commit of this repository"
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/compare-answers.XXXXXX")"
KEEP="${OUT:-}"
OUT="${OUT:-$WORK/out}"
mkdir -p "$OUT"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git -C "$ROOT" worktree remove --force "$WORK/before-tree" >/dev/null 2>&1 || true
  rm -rf "$WORK/before-tree" "$WORK/run-"*
  if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

say "building $BEFORE ($(git -C "$ROOT" rev-parse --short "$rev")) and the working tree"
git -C "$ROOT" worktree add --detach "$WORK/before-tree" "$rev" >/dev/null 2>&1
build() { (cd "$1" && CGO_ENABLED=0 "$GO" build -trimpath -tags nethttpomithttp2 -o "$2" .); }
build "$WORK/before-tree" "$WORK/synapse-before"
build "$ROOT" "$WORK/synapse-after"

TOKEN=compare-answers-admin-token-0123

# The command lines that need no agent: the help of every command and
# verb, the refusals of bad command lines, config check.
offline_lines() {
  local bin="$1"
  echo "--help"
  echo "--version"
  echo "help"
  echo "nosuchcommand"
  echo "task nosuchverb"
  echo "task submit"
  echo "task get"
  echo "task submit echo --payload {not-json}"
  echo "task list --limit -1"
  echo "serve --listen nonsense"
  echo "serve --log-level loud"
  echo "config check"
  echo "config check --config $WORK/good.json"
  echo "config check --config $WORK/bad.json"
  echo "config check --config $WORK/unknown.json"
  echo "config check --config $WORK/missing.json"
  # Commands and their verbs, from the top-level help: "name  text (v1, v2)".
  "$bin" --help 2>&1 | awk '/^Commands:/{on=1; next} /^$/{on=0} on' |
    while read -r cmd rest; do
      echo "help $cmd"
      echo "$cmd --help"
      echo "$cmd --nosuchflag"
      verbs="$(printf '%s\n' "$rest" | sed -n 's/.*(\([a-z0-9, -]*\))$/\1/p' | tr -d ',')"
      for v in $verbs; do
        echo "$cmd $v --help"
        echo "help $cmd $v"
        echo "$cmd $v --nosuchflag"
      done
    done
}

# The command lines against a running agent, in order: each one sees what
# the ones before it did.
online_lines() {
  cat <<'EOF'
identity
--json identity
capabilities
--json capabilities
task submit echo --payload {"msg":"hi"} --wait 5s
--json task submit echo --payload {"msg":"hi"} --wait 5s
task submit nosuchtype --payload {}
task submit echo --payload {"msg":"hi"} --idempotency-key k1 --wait 5s
task submit echo --payload {"msg":"hi"} --idempotency-key k1 --wait 5s
task submit echo --payload {"msg":"other"} --idempotency-key k1 --wait 5s
task list
--json task list
task get 00000000-0000-7000-8000-000000000000
token list
token create reader --scope tasks:read
token create bad --scope nosuchscope
outbox list
hil list
group list
vote list
registry list
contract list
peer list
peer pending
tier1 routines
--json tier1 routines
tier1 exports
audit list
audit verify
db stats
config reload
EOF
}

# The raw HTTP requests: METHOD PATH [BODY]. Bodies have no spaces.
http_lines() {
  cat <<'EOF'
GET /health
GET /api/v1/synapse/health
GET /api/v1/synapse/identity
GET /api/v1/synapse/capabilities
GET /api/v1/synapse/capabilities/task-types/echo
GET /api/v1/synapse/capabilities/task-types/nosuch
GET /api/v1/synapse/tasks
GET /api/v1/synapse/tasks?limit=abc
GET /api/v1/synapse/tasks/summary
GET /api/v1/synapse/task/nosuch
POST /api/v1/synapse/task {
POST /api/v1/synapse/task {"task_type":"echo"}
POST /api/v1/synapse/task {"task_type":"echo","payload":{"msg":"x"},"transport_mode":"nosuch"}
POST /api/v1/synapse/task ["not","an","object"]
POST /api/v1/synapse/task {"task_type":7}
DELETE /api/v1/synapse/task
GET /api/v1/synapse/nosuchroute
GET /api/v1/synapse/tier1/routines
GET /api/v1/synapse/tier1/exports
POST /api/v1/synapse/tier1/nosuch.routine x
GET /api/v1/synapse/tokens
GET /api/v1/synapse/outbox
GET /api/v1/synapse/hil
GET /api/v1/synapse/groups
GET /api/v1/synapse/contracts
GET /api/v1/synapse/peers
GET /api/v1/synapse/registry/agents
GET /api/v1/synapse/agents
GET /api/v1/synapse/audit
GET /api/v1/synapse/admin/db/check
GET /.well-known/agent-card.json
GET /.well-known/agent.json
EOF
}

cat >"$WORK/good.json" <<'EOF'
{"agent_name": "cmp", "max_concurrent_tasks": 4}
EOF
cat >"$WORK/bad.json" <<'EOF'
{"max_concurrent_tasks": -1, "tier1": {"routines": [{"capability_id": ""}]}}
EOF
cat >"$WORK/unknown.json" <<'EOF'
{"agent_nmae": "cmp"}
EOF

# transcript BIN NAME writes NAME.txt: every command line, its exit code
# and its output (standard output, then standard error).
transcript() {
  local bin="$1" name="$2" run="$WORK/run-$2" port out
  mkdir -p "$run"
  out="$OUT/$name.raw"
  : >"$out"
  one() {
    local rc=0 o e
    o="$run/o" e="$run/e"
    (cd "$run" && timeout 20 "$bin" "$@" >"$o" 2>"$e") || rc=$?
    {
      echo "=== synapse $*"
      echo "--- exit $rc"
      cat "$o"
      echo "--- stderr"
      cat "$e"
    } >>"$out"
  }
  while IFS= read -r line; do
    # shellcheck disable=SC2086
    one $line
  done < <(offline_lines "$bin")

  # Port 0: the agent logs the port it listens on.
  SYNAPSE_ADMIN_TOKEN=$TOKEN "$bin" serve --data "$run/data" --listen 127.0.0.1:0 >"$run/serve.log" 2>&1 &
  pids+=($!)
  port=
  for _ in $(seq 100); do
    port="$(sed -n 's/.*msg=serving .*listen=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$run/serve.log")"
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/api/v1/synapse/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    say "the agent of $name did not start:"
    cat "$run/serve.log" >&2
    exit 1
  fi
  export SYNAPSE_AGENT="http://127.0.0.1:$port" SYNAPSE_TOKEN=$TOKEN
  while IFS= read -r line; do
    read -r -a args <<<"$line"
    one "${args[@]}"
  done < <(online_lines)
  while read -r method path body; do
    local rc=0
    {
      echo "=== curl -X $method $path${body:+ $body}"
      curl -sS -m 20 -X "$method" -H "Authorization: Bearer $TOKEN" ${body:+-H 'Content-Type: application/json' --data-binary "$body"} \
        -D - -o "$run/body" "http://127.0.0.1:$port$path" | tr -d '\r' | grep -vi '^date:' || rc=$?
      cat "$run/body"
      echo
    } >>"$out"
  done < <(http_lines)
  unset SYNAPSE_AGENT SYNAPSE_TOKEN
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true

  # Mask what differs between any two runs.
  local ver
  ver="$("$bin" --version 2>&1 | head -1)"
  sed -E \
    -e "s#$run#<dir>#g" \
    -e "s#$WORK#<work>#g" \
    -e "s#$(printf '%s' "$ver" | sed 's/[][\.*^$#]/\\&/g')#<version>#g" \
    -e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<uuid>/g' \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2})?/<time>/g' \
    -e 's/(edge_[A-Za-z0-9-]+_)[0-9a-f]{6}/\1<id>/g' \
    -e 's/SHA256:[A-Za-z0-9+\/=]{43,44}/SHA256:<fp>/g' \
    -e 's/[A-Za-z0-9+\/_-]{43}=/<key>/g' \
    -e 's/tok_[0-9a-f]{12}/tok_<id>/g' \
    -e 's/syn_[A-Za-z0-9_-]{22}/syn_<secret>/g' \
    -e 's/[0-9a-f]{32,}/<hex>/g' \
    -e "s/127\.0\.0\.1:$port/127.0.0.1:<port>/g" \
    -e 's/\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms)\b/<dur>/g' \
    -e 's/^(Content-Length|content-length): [0-9]+$/\1: <n>/' \
    -e 's/^(group commits|bytes written|bytes per write|fsyncs|fsyncs per write|writes per fsync|log bytes|log not checkpointed): +[0-9.]+/\1: <n>/' \
    -e 's/"records":[0-9]+,"first":[0-9]+,"last":[0-9]+/"records":<n>,"first":<n>,"last":<n>/' \
    "$out" >"$OUT/$name.txt"
  rm -f "$out"
}

transcript "$WORK/synapse-before" before
transcript "$WORK/synapse-after" after

lines="$(grep -c '^=== ' "$OUT/before.txt")"
# One block per command line; count the blocks that differ.
split_blocks() { awk -v dir="$2" '/^=== /{n++} {print > (dir "/" sprintf("%05d", n))}' "$1"; }
mkdir -p "$WORK/b" "$WORK/a"
split_blocks "$OUT/before.txt" "$WORK/b"
split_blocks "$OUT/after.txt" "$WORK/a"
differ=0
: >"$OUT/diff.txt"
for f in "$WORK/b"/*; do
  g="$WORK/a/$(basename "$f")"
  if ! cmp -s "$f" "$g"; then
    differ=$((differ + 1))
    diff -u "$f" "$g" >>"$OUT/diff.txt" || true
  fi
done
if [ "$(ls "$WORK/a" | wc -l)" != "$(ls "$WORK/b" | wc -l)" ]; then
  say "the transcripts have different numbers of command lines"
  differ=$((differ + 1))
fi
rm -rf "$WORK/a" "$WORK/b"
say "$lines command lines and requests, $differ answers differ"
if [ "$differ" -gt 0 ]; then
  KEEP=1
  say "the differences: $OUT/diff.txt"
  exit 1
fi
