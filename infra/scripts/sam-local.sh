#!/usr/bin/env bash
# The functions run the way a SAM user runs them, on this machine's Docker Engine with no
# container registry:
#   sam-local.sh          build, invoke each function, serve the API, check it, clean up
# Steps (each timed in the log):
#   1. lambda-base-image.sh: the provided.al2023 stand-in, built from Debian's packages
#      (SAM builds its "rapid" images FROM it; --skip-pull-image: no registry is asked).
#   2. model-layer.sh fills the EmbeddingModelLayer; `sam build` with cargo-lambda on this
#      machine (no build container), in debug mode (SAM_BUILD_MODE=debug: no --release,
#      a fraction of a release build's time) and with cargo as the compiler
#      (CARGO_LAMBDA_COMPILER=cargo, no zig), into the workspace's target directory; the
#      adapter functions share one binary, so it is compiled once. check-glibc.sh then
#      checks the bootstraps need no glibc symbol newer than Amazon Linux 2023's 2.34.
#   3. The demo index (`switchyard index build`) is copied beside the router's and the
#      policies adapter's bootstrap (`/var/task/index/` in their containers), and an
#      --env-vars file points them at it: the router reads SWITCHYARD_INDEX instead of
#      S3, runs the adapters in-process from the TemplatesLayer (SWITCHYARD_TEMPLATES=
#      /opt/templates/demo) instead of invoking them, and keeps sessions and caches in
#      memory (the table variables empty). Nothing in a container talks to the host.
#   4. `sam local invoke` of the router with events/*.json (API Gateway HTTP API v2), and
#      of the tools, hr, ev and policies adapters with events/adapter-*.json.
#   5. `sam local start-api` on 127.0.0.1 (warm containers) answers /v1/health,
#      /v1/route, /v1/query and /v1/openapi.json, checked against openapi.json, and the
#      A2A agent: its card and `POST /a2a` answering a completed task (sam_api_check.py),
#      and the official a2a-sdk client resolving that card, asking and getting the task.
# Environment: SAM_LOCAL_PORT (default 3300) for start-api; SWITCHYARD_BIN, the CLI
# (default target/debug/switchyard); SWITCHYARD_CACHE_DIR as for every script. Needs
# docker, the AWS tools (aws-tools.sh) and the CLI built (cargo build --workspace --bins).
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh

PORT="${SAM_LOCAL_PORT:-3300}"
BUILD=.aws-sam/build
WORK=.aws-sam/local
export SAM_CLI_TELEMETRY=0 SAM_SKIP_PULL_IMAGE=1
# No AWS account: a region for SAM and the SDK in the containers, no profile, no real
# credentials (nothing in the containers calls AWS: see step 3).
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset AWS_PROFILE AWS_SESSION_TOKEN
# Where `sam local` finds the images it derives; never a registry.
INVOKE_IMAGE="switchyard/lambda-provided:al2023-x86_64"

say() { echo "sam-local: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
step_start=0
step() { step_start=$(date +%s); say "== $*"; }
step_done() { say "   ($1 took $(($(date +%s) - step_start)) s)"; }

command -v docker >/dev/null 2>&1 || fail "docker not found"
docker info >/dev/null 2>&1 || fail "the Docker Engine does not answer"
command -v sam >/dev/null 2>&1 || fail "sam not found: run ./infra/scripts/aws-tools.sh"
BIN="${SWITCHYARD_BIN:-target/debug/switchyard}"
[ -x "$BIN" ] || fail "$BIN missing: cargo build --workspace --bins"

SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  # SAM labels its containers; warm ones outlive a killed start-api.
  local left
  left=$(docker ps -aq --filter label=sam.cli.container.type=lambda)
  [ -z "$left" ] || docker rm -f $left >/dev/null 2>&1 || true
}
trap cleanup EXIT

mkdir -p .aws-sam
step "base image"
./infra/scripts/lambda-base-image.sh
step_done "base image"

step "sam build (debug, cargo-lambda with cargo)"
./infra/scripts/model-layer.sh >/dev/null
# --no-cached: SAM's cache hashes only the function's package folder, not the shared crates
# it uses; cargo's own fingerprints make a rebuild cheap anyway. cargo-lambda builds for
# x86_64-unknown-linux-gnu: test.sh builds everything for that target too
# (CARGO_BUILD_TARGET), so this build finds the workspace's dependencies compiled.
SAM_BUILD_MODE=debug CARGO_LAMBDA_COMPILER=cargo sam build --no-cached --build-dir "$BUILD" \
  >"$WORK.build.log" 2>&1 || {
  tail -n 40 "$WORK.build.log" >&2
  fail "sam build"
}
step_done "sam build"
./infra/scripts/check-glibc.sh "$BUILD/RouterFunction/bootstrap" "$BUILD/ToolsAdapterFunction/bootstrap"
# Only the adapter function serves DuckDB: the router is built with its own features.
grep -q duckdb_open "$BUILD/ToolsAdapterFunction/bootstrap" ||
  fail "the adapter function does not link DuckDB"
! grep -q duckdb_open "$BUILD/RouterFunction/bootstrap" ||
  fail "the router function links DuckDB (built with the workspace's features?)"
say "   router $(du -m "$BUILD/RouterFunction/bootstrap" | cut -f1) MB, adapter $(du -m "$BUILD/ToolsAdapterFunction/bootstrap" | cut -f1) MB (debug)"

step "demo index for the containers"
rm -rf "$WORK"
mkdir -p "$WORK/index"
"$BIN" --templates templates/demo index build --out "$WORK/index/demo.idx" 2>"$WORK/index.log" ||
  { cat "$WORK/index.log" >&2; fail "index build"; }
for function in RouterFunction PoliciesAdapterFunction; do
  rm -rf "$BUILD/$function/index"
  cp -R "$WORK/index" "$BUILD/$function/index"
done
# Declared variables only (SAM ignores others): see template.yaml's RouterFunction.
cat >"$WORK/env.json" <<'JSON'
{
  "RouterFunction": {
    "SWITCHYARD_INDEX_BUCKET": "",
    "SWITCHYARD_INDEX": "/var/task/index/demo.idx",
    "SWITCHYARD_TEMPLATES": "/opt/templates/demo",
    "SWITCHYARD_SESSIONS_TABLE": "",
    "SWITCHYARD_RERANK_CACHE_TABLE": "",
    "SWITCHYARD_FEEDBACK_TABLE": "",
    "SWITCHYARD_WORKFLOW_TABLE": "",
    "SWITCHYARD_TOPICS_TABLE": ""
  },
  "PoliciesAdapterFunction": {
    "SWITCHYARD_INDEX_BUCKET": "",
    "SWITCHYARD_INDEX": "/var/task/index/demo.idx"
  },
  "EvAdapterFunction": {
    "SWITCHYARD_INDEX_BUCKET": ""
  }
}
JSON
step_done "index"

# invoke FUNCTION EVENT: the function's answer (stdout's last line), checked by a Python
# expression over `r`, the parsed answer.
invoke() {
  local function=$1 event=$2 check=$3 out started
  local log
  log="$WORK/invoke-$function-$(basename "$event" .json).log"
  started=$(date +%s%N)
  if ! out=$(sam local invoke "$function" --event "$event" --env-vars "$WORK/env.json" \
    --skip-pull-image --invoke-image "$INVOKE_IMAGE" --container-host 127.0.0.1 \
    --container-host-interface 127.0.0.1 2>"$log"); then
    tail -n 30 "$log" >&2
    fail "sam local invoke $function --event $event"
  fi
  local answer
  answer=$(printf '%s\n' "$out" | tail -n 1)
  if ! python3 -c 'import json, sys; r = json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$answer" "$check"; then
    tail -n 30 "$log" >&2
    fail "sam local invoke $function --event $event answered $answer (wanted $check)"
  fi
  # The emulator's REPORT line: its Init Duration is not the cold start (the runtime
  # initialises inside the first invoke), so the first Duration is; the router logs its own
  # cold start's parts. The emulator reports the memory size as the memory used.
  local report
  report=$(grep -o $'\tDuration: [0-9.]* ms' "$log" | head -n 1 | tr -d '\t' || true)
  say "invoke $function $event: ok in $((($(date +%s%N) - started) / 1000000)) ms wall; emulator: ${report:-no REPORT line}"
  grep -o '"cold start".*' "$log" | head -n 1 | sed 's/^/sam-local:    router /' >&2 || true
  say "   answer: ${answer:0:200}"
}

step "sam local invoke"
body='json.loads(r["body"])'
invoke RouterFunction events/health.json "r['statusCode'] == 200 and $body['templates'] > 0"
invoke RouterFunction events/query.json "r['statusCode'] == 200 and $body['content'] == '14 employees work in Engineering.'"
# The router's metrics reach CloudWatch as EMF lines on stdout, flushed per invocation by
# the metrics crate's Lambda integration: the cold start's count, then the request's
# metrics, each document tagged with the invocation's request id.
python3 - "$WORK/invoke-RouterFunction-query.log" <<'PY' || fail "the router's EMF metrics (log: $WORK/invoke-RouterFunction-query.log)"
import json, sys
documents = [json.loads(line) for line in map(str.strip, open(sys.argv[1]))
             if line.startswith("{") and '"_aws"' in line]
names = {m["Name"] for d in documents for m in d["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
missing = {"ColdStarts", "RequestLatencyMs", "Requests"} - names
assert not missing, f"EMF metrics missing: {sorted(missing)}; written: {sorted(names)}"
assert all(d.get("RequestId") for d in documents), "an EMF document has no RequestId"
print(f"sam-local:    router EMF: {len(documents)} documents, {len(names)} metrics", file=sys.stderr)
PY
invoke RouterFunction events/route.json "r['statusCode'] == 200 and 'calculator_percentage' in json.dumps($body['routing_decision'])"
invoke RouterFunction events/query-bad-json.json "r['statusCode'] == 400"
invoke ToolsAdapterFunction events/adapter-tools.json "r['status'] == 'ok' and '30' in r['content']"
invoke HrAdapterFunction events/adapter-hr.json "r['status'] == 'ok' and r['content'] == '14 employees work in Engineering.'"
# DuckDB in the Lambda image, over the catalog layer's CSV (no bucket under sam local).
invoke EvAdapterFunction events/adapter-ev.json "r['status'] == 'ok' and r['content'] == 'There are 71 registered Tesla vehicles.'"
invoke PoliciesAdapterFunction events/adapter-policies.json "r['status'] == 'ok' and r['data']['chunks'][0]['document'] == 'car'"
step_done "invokes"

step "sam local start-api on 127.0.0.1:$PORT"
sam local start-api --host 127.0.0.1 --port "$PORT" --env-vars "$WORK/env.json" \
  --skip-pull-image --invoke-image "$INVOKE_IMAGE" --warm-containers LAZY \
  --container-host 127.0.0.1 --container-host-interface 127.0.0.1 \
  >"$WORK/start-api.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 120); do
  curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/v1/openapi.json" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 30 "$WORK/start-api.log" >&2; fail "start-api exited"; }
  sleep 1
done
python3 infra/scripts/sam_api_check.py "http://127.0.0.1:$PORT" openapi.json ||
  { tail -n 30 "$WORK/start-api.log" >&2; fail "start-api answers"; }
# The official A2A client (PyPI a2a-sdk, installed into the project's virtualenv by
# infra/scripts/chat-clients.sh) against the deployed path too, not only against `serve`.
python3 -c 'import a2a' 2>/dev/null ||
  fail "the a2a-sdk client is not installed in $(command -v python3): run ./infra/scripts/chat-clients.sh first"
python3 infra/scripts/a2a_clients.py --base-url "http://127.0.0.1:$PORT" --deployed ||
  { tail -n 30 "$WORK/start-api.log" >&2; fail "the a2a-sdk client against start-api"; }
# What the warm router container holds after its answers (the emulator does not measure it).
docker stats --no-stream --format '{{.Name}} {{.MemUsage}}' \
  $(docker ps -q --filter label=sam.cli.container.type=lambda) 2>/dev/null |
  sed 's/^/sam-local: memory of the warm container /' >&2 || true
step_done "start-api"
say "passed"
