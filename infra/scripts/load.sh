#!/usr/bin/env bash
# Load figures for `switchyard serve` on 127.0.0.1, with wrk (Debian's package, installed
# when missing): throughput and p50/p95/p99 at concurrency 1, 8 and 32 on the demo and
# CLINC150 catalogs, for /v1/route and /v1/query; resident memory before and after
# $LOAD_LONG_REQUESTS (100,000) requests; and overload: a server allowed 2 requests in
# flight and 4 waiting, hit by 64 connections, must answer 503 with Retry-After rather
# than let latency grow.
# Every run is bounded in count and time. Each server is started here and stopped on exit.
#   SWITCHYARD_BIN       the binary (default target/release/switchyard; build it first:
#                        cargo build --release --bin switchyard)
#   LOAD_SECONDS         seconds per concurrency run (default 10)
#   LOAD_LONG_REQUESTS   requests of each round of the memory run (default 100000)
#   LOAD_LONG_ROUNDS     rounds of the memory run, RSS read after each (default 1; 3 show
#                        the plateau once the feedback store holds its 100,000 decisions)
#   LOAD_PARTS           which parts run (default "throughput memory overload")
#   LOAD_OUT             where the JSON lines go (default target/load/results.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
BIN="${SWITCHYARD_BIN:-$ROOT/target/release/switchyard}"
SECONDS_PER_RUN="${LOAD_SECONDS:-10}"
LONG_REQUESTS="${LOAD_LONG_REQUESTS:-100000}"
LONG_ROUNDS="${LOAD_LONG_ROUNDS:-1}"
PARTS="${LOAD_PARTS:-throughput memory overload}"
part() { [[ " $PARTS " == *" $1 "* ]]; }
OUT="${LOAD_OUT:-$ROOT/target/load/results.jsonl}"
PORT=18090
WORK="$(mktemp -d)"
SERVER_PID=""

[ -x "$BIN" ] || { echo "load: $BIN not found; cargo build --release --bin switchyard" >&2; exit 1; }
if ! command -v wrk >/dev/null; then
  echo "load: installing wrk from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
./infra/scripts/fetch-model.sh >/dev/null

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap 'stop_server; rm -rf "$WORK"' EXIT

# start_server CATALOG [ENV=VALUE...]: serve CATALOG on $PORT, wait (at most 120 s) for health.
start_server() {
  local catalog="$1"
  shift
  env "$@" "$BIN" --templates "$catalog" serve --host 127.0.0.1 --port "$PORT" \
    >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$PORT/v1/health" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "load: the server did not become healthy in 120 s" >&2
  exit 1
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status"; }

# bodies DATASET: one {"query": ...} line per question of DATASET (JSON lines with "text").
bodies() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line:
        print(json.dumps({"query": json.loads(line)["text"]}))' "$1" >"$WORK/bodies.jsonl"
}

# wrk_json PATH CONNECTIONS SECONDS: one wrk run, its figures as one JSON line.
wrk_json() {
  local path="$1" connections="$2" seconds="$3"
  local threads=$((connections < 2 ? 1 : 2))
  LOAD_BODIES="$WORK/bodies.jsonl" wrk -t "$threads" -c "$connections" -d "${seconds}s" \
    --timeout 10s -s "$ROOT/infra/load/requests.lua" "http://127.0.0.1:$PORT$path" | tail -n 1
}

# run LABEL PATH CONNECTIONS SECONDS: one wrk run; appends a JSON line to $OUT.
run() {
  local label="$1" path="$2" connections="$3" seconds="$4"
  echo "{\"run\": \"$label\", \"path\": \"$path\", \"connections\": $connections, \"figures\": $(wrk_json "$path" "$connections" "$seconds")}" | tee -a "$OUT"
}

# run_count PATH CONNECTIONS REQUESTS: 10-second wrk runs until REQUESTS were answered (at
# most 120 runs); prints the answered count and the runs' non-2xx and socket errors.
run_count() {
  local path="$1" connections="$2" requests="$3" answered=0 failed=0 runs=0 figures
  while [ "$answered" -lt "$requests" ] && [ "$runs" -lt 120 ]; do
    figures=$(wrk_json "$path" "$connections" 10)
    answered=$((answered + $(echo "$figures" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')))
    failed=$((failed + $(echo "$figures" | python3 -c 'import json,sys; f=json.load(sys.stdin); print(f["http_errors"]+f["connect_errors"]+f["timeouts"]+f["read_errors"])')))
    runs=$((runs + 1))
  done
  echo "$answered $failed"
}

mkdir -p "$(dirname "$OUT")"
: >"$OUT"
# The throughput table: the embedding cache off, so every request embeds its question (the
# demo's 65 questions would otherwise all be cache hits after the first round).
for catalog in demo clinc150; do
  part throughput || break
  case "$catalog" in
    demo) bodies tests/data/demo/queries.jsonl ;;
    clinc150) bodies tests/data/clinc150/val.jsonl ;;
  esac
  start_server "templates/$catalog" SWITCHYARD__EMBEDDING__CACHE_SIZE=0
  for path in /v1/route /v1/query; do
    for connections in 1 8 32; do
      run "$catalog" "$path" "$connections" "$SECONDS_PER_RUN"
    done
  done
  stop_server
done

# Memory: RSS after start-up and a 10-second warm-up, then after each round of
# LONG_REQUESTS more (each at most 120 ten-second runs), sessions on so the session store
# grows too.
if part memory; then
  bodies tests/data/clinc150/val.jsonl
  python3 -c '
import json, sys
for i, line in enumerate(open(sys.argv[1])):
    body = json.loads(line)
    body["session_id"] = "load-%d" % (i % 500)
    print(json.dumps(body))' "$WORK/bodies.jsonl" >"$WORK/sessions.jsonl"
  mv "$WORK/sessions.jsonl" "$WORK/bodies.jsonl"
  start_server templates/clinc150
  wrk_json /v1/query 8 10 >/dev/null
  before=$(rss_kb)
  total=0
  for round in $(seq 1 "$LONG_ROUNDS"); do
    read -r answered failed < <(run_count /v1/query 8 "$LONG_REQUESTS")
    total=$((total + answered))
    echo "{\"run\": \"rss\", \"round\": $round, \"requests\": $total, \"failed\": $failed, \"rss_before_kb\": $before, \"rss_after_kb\": $(rss_kb)}" | tee -a "$OUT"
  done
  stop_server
fi

# Overload: 2 in flight, 4 waiting, 64 connections: the rest must be refused at once.
if part overload; then
  bodies tests/data/clinc150/val.jsonl
  start_server templates/clinc150 SWITCHYARD__SERVER__MAX_IN_FLIGHT=2 SWITCHYARD__SERVER__MAX_QUEUED=4
  run overload /v1/query 64 "$SECONDS_PER_RUN"
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/health")
  echo "{\"run\": \"overload-after\", \"health_status\": $status}" | tee -a "$OUT"
  stop_server
fi
echo "load: figures in $OUT"
