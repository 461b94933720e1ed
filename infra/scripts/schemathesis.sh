#!/usr/bin/env bash
# API conformance: schemathesis (PyPI, pinned below) against the OpenAPI document that
# `switchyard serve` serves at /v1/openapi.json (the committed openapi.json; a Rust test
# keeps the two the same), on the demo catalog, on 127.0.0.1 only. Every operation is
# tested in schemathesis's examples, coverage and fuzzing phases (stateful has no links
# to follow), with these checks on every response:
#   not_a_server_error           no 5xx
#   status_code_conformance      the status is one the operation documents
#   content_type_conformance     the Content-Type is the one documented for that status
#   response_schema_conformance  the body matches the documented schema
# One narrow exception: POST /v1/query documents 501, 502 and 504 as answers (the
# datasource's kind has no adapter here, the adapter failed, it timed out), with a
# QueryAnswer body; on the demo catalog a split question none of whose parts is answered
# is a legitimate 502 ("Compute 5 divided by 0 and then list the employees hired on
# 31 February"). For that operation only, and for those three statuses only, a 5xx is
# not a server error; its status, Content-Type and body are still checked like any
# other answer's. 500, 503 and every other operation's 5xx still fail.
# Not run: positive_data_acceptance and the other checks whose verdict depends on values
# the document cannot know (datasource names and filters come from the catalog, a
# feedback's request_id from an earlier answer).
# By default schemathesis leaves out the operation that serves the document itself;
# --include-path-regex '^/v1/' selects every operation, that one too.
#
# Bounded: at most $SCHEMATHESIS_MAX_EXAMPLES cases per operation and phase, one worker,
# the whole run stopped after $SCHEMATHESIS_TIMEOUT seconds (a failure). Each run draws
# a new random seed and prints it; SCHEMATHESIS_SEED replays one.
# The server is started here on a free port (--port 0; it prints the address it bound)
# and stopped on exit. SWITCHYARD_CACHE_DIR is left as the caller's: the model and the
# index caches live there. schemathesis lives in its own virtualenv, beside the
# project's (whose pins it must not move), installed on the first run.
#   SWITCHYARD_BIN              the binary (default target/debug/switchyard; build it
#                               first: cargo build --bin switchyard)
#   SCHEMATHESIS_MAX_EXAMPLES   cases per operation (default 200)
#   SCHEMATHESIS_TIMEOUT        seconds for the schemathesis run (default 150)
#   SCHEMATHESIS_SEED           replay this seed
# Exits non-zero, after schemathesis's report, on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"

SCHEMATHESIS_VERSION="4.32.5"
CACHE="${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}"
VENV="$CACHE/venv-schemathesis"
BIN="${SWITCHYARD_BIN:-$ROOT/target/debug/switchyard}"
MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-200}"
TIME_LIMIT="${SCHEMATHESIS_TIMEOUT:-150}"
WORK="$(mktemp -d)"

say() { echo "schemathesis: $*"; }
fail() {
  echo "schemathesis: $*" >&2
  exit 1
}

. infra/scripts/demo-server.sh
trap 'demo_server_stop; rm -rf "$WORK"' EXIT

[ -x "$BIN" ] || fail "$BIN not found; cargo build --bin switchyard"

# schemathesis in its own virtualenv; nothing to do when the pinned version is there.
installed() {
  [ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" = "schemathesis, version $SCHEMATHESIS_VERSION" ]
}
if ! installed; then
  # Only ever delete a folder that is a (broken) virtualenv.
  if [ -e "$VENV" ] && [ ! -f "$VENV/pyvenv.cfg" ]; then
    fail "$VENV exists and is not a virtualenv; move it away"
  fi
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    say "creating $VENV"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$VENV" ||
      fail "\`${PYTHON:-python3} -m venv\` failed; install python3-venv (Debian/Ubuntu) or set PYTHON"
  fi
  say "installing schemathesis==$SCHEMATHESIS_VERSION into $VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet \
    "schemathesis==$SCHEMATHESIS_VERSION" || fail "pip could not install schemathesis==$SCHEMATHESIS_VERSION"
  installed || fail "$VENV/bin/schemathesis is not version $SCHEMATHESIS_VERSION after the install"
fi

./infra/scripts/fetch-model.sh >/dev/null

demo_server_start "$BIN" "$WORK/server.log" || fail "the server did not start (above)"
BASE="http://127.0.0.1:$PORT"
healthy=""
for _ in $(seq 1 60); do
  if curl -sf --noproxy '*' --max-time 5 -o /dev/null "$BASE/v1/health"; then
    healthy=1
    break
  fi
  sleep 0.5
done
[ -n "$healthy" ] || { tail -n 20 "$WORK/server.log" >&2; fail "GET /v1/health did not answer 200 within 30 s"; }
say "server on $BASE (log: server.log, shown on failure)"

# The one exception above, and nothing else.
cat >"$WORK/schemathesis.toml" <<'EOF'
[[operations]]
include-path = "/v1/query"
include-method = "POST"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "501", "502", "504"]
EOF

say "schemathesis $SCHEMATHESIS_VERSION on $BASE/v1/openapi.json: $MAX_EXAMPLES cases per operation, at most $TIME_LIMIT s"
started=$(date +%s)
status=0
# Run from the scratch folder (anything schemathesis writes stays there), with no proxy:
# every request goes to 127.0.0.1.
(
  cd "$WORK"
  env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy \
    NO_PROXY='*' no_proxy='*' \
    timeout --kill-after=10 "$TIME_LIMIT" \
    "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" --no-color \
    run "$BASE/v1/openapi.json" \
    --include-path-regex '^/v1/' \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$MAX_EXAMPLES" \
    --workers 1 \
    --request-timeout 10 \
    --generation-database none \
    ${SCHEMATHESIS_SEED:+--seed "$SCHEMATHESIS_SEED"}
) || status=$?
elapsed=$(($(date +%s) - started))

if [ "$status" -ne 0 ]; then
  echo "schemathesis: the server's log (last 40 lines):" >&2
  tail -n 40 "$WORK/server.log" >&2
  case "$status" in
    124 | 137) fail "the run did not finish within $TIME_LIMIT s" ;;
    *) fail "failed (exit $status, ${elapsed} s): see the report above" ;;
  esac
fi
kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 40 "$WORK/server.log" >&2; fail "the server died during the run"; }
say "passed in ${elapsed} s"
