#!/usr/bin/env bash
# Local stand-ins for the AWS services, on 127.0.0.1 only:
#   aws-local.sh start    start both and wait until they answer
#   aws-local.sh stop     stop both (idempotent)
#   aws-local.sh status   say what runs
#   aws-local.sh env      print the export lines that point SDKs and tests at them
# moto_server (S3, DynamoDB, ...) listens on $SWITCHYARD_MOTO_PORT (default 55500); a second
# one on $SWITCHYARD_MOTO_IAM_PORT (default 55502) enforces IAM, for the tests that run the
# stores under the template's policies (functions/router/tests/aws/iam.rs);
# `cargo lambda watch` emulates the Lambda Invoke API on $SWITCHYARD_LAMBDA_PORT (default
# 55501) and serves the workspace's binaries by name: POST
# /2015-03-31/functions/switchyard-adapter/invocations runs `switchyard-adapter` with
# SWITCHYARD_TEMPLATES=<repo>/templates/demo and no SWITCHYARD_DATASOURCE (every
# datasource of the catalog). A second one on $SWITCHYARD_LAMBDA_SQL_PORT (default 55503)
# serves the catalog tests/data/catalogs/servers, whose `ev` is on the MariaDB server of
# infra/scripts/mariadb.sh (SWITCHYARD_TEST_MYSQL_URL, passed on when set) and whose
# `rust_docs` fetches pages from the web server a test starts on
# $SWITCHYARD_TEST_WEB_PORT (default 25504; SWITCHYARD_TEST_WEB_URL). It compiles a
# binary on its first invoke (a debug build), and does not rebuild on source changes
# unless SWITCHYARD_LAMBDA_RELOAD=1.
# State and logs: /tmp/switchyard-aws-local/ (moto.log, lambda.log, *.pid).
# Needs moto_server and cargo-lambda in the project virtualenv (infra/scripts/venv.sh):
# ./infra/scripts/aws-tools.sh installs them there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh
ROOT="$PWD"
MOTO_PORT="${SWITCHYARD_MOTO_PORT:-55500}"
LAMBDA_PORT="${SWITCHYARD_LAMBDA_PORT:-55501}"
MOTO_IAM_PORT="${SWITCHYARD_MOTO_IAM_PORT:-55502}"
LAMBDA_SQL_PORT="${SWITCHYARD_LAMBDA_SQL_PORT:-55503}"
# Below Linux's ephemeral range (32768-60999): the test binds it while other tests hold
# client connections, any of which may have been given a port of that range (seen: 55504
# "already in use").
WEB_PORT="${SWITCHYARD_TEST_WEB_PORT:-25504}"
STATE="/tmp/switchyard-aws-local"
TIMEOUT="${SWITCHYARD_AWS_LOCAL_TIMEOUT:-60}"
for port in "$MOTO_PORT" "$LAMBDA_PORT" "$MOTO_IAM_PORT" "$LAMBDA_SQL_PORT" "$WEB_PORT"; do
  case "$port" in ''|*[!0-9]*) echo "aws-local: bad port '$port'" >&2; exit 2 ;; esac
  [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || { echo "aws-local: bad port '$port'" >&2; exit 2; }
done
MOTO_URL="http://127.0.0.1:$MOTO_PORT"
LAMBDA_URL="http://127.0.0.1:$LAMBDA_PORT"
MOTO_IAM_URL="http://127.0.0.1:$MOTO_IAM_PORT"
LAMBDA_SQL_URL="http://127.0.0.1:$LAMBDA_SQL_PORT"
# Served by the test that needs it, not by this script: the adapter only needs its address.
WEB_URL="http://127.0.0.1:$WEB_PORT"

# The process group a pid file names, if it still runs the command we started there.
running() { # name pattern
  local pid
  pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" || return 1
  echo "$pid"
}

# The process we just started is still there (its command line may not be exec'd yet).
alive() { kill -0 "$(cat "$STATE/$1.pid" 2>/dev/null)" 2>/dev/null; }

moto_up() { curl -fs -o /dev/null --max-time 2 "$MOTO_URL/moto-api/"; }
moto_iam_up() { curl -fs -o /dev/null --max-time 2 "$MOTO_IAM_URL/moto-api/"; }
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# cargo lambda watch accepts connections (a TCP connect: an HTTP probe would log an error).
lambda_up() { port_taken "$LAMBDA_PORT"; }
lambda_sql_up() { port_taken "$LAMBDA_SQL_PORT"; }

# Stop a process group: TERM, then KILL after 10 s.
stop_one() { # name pattern
  local pid
  if pid=$(running "$1" "$2"); then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 -- "-$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    echo "aws-local: stopped $1 (process group $pid)"
  fi
  rm -f "$STATE/$1.pid"
}

refuse() { # message: nothing to show in the logs
  echo "aws-local: $1" >&2
  "$0" stop >/dev/null 2>&1 || true
  exit 1
}

fail_start() { # message
  echo "aws-local: $1" >&2
  for log in "$STATE/moto.log" "$STATE/moto-iam.log" "$STATE/lambda.log" "$STATE/lambda-sql.log"; do
    [ -s "$log" ] || continue
    echo "--- last lines of $log" >&2
    tail -n 20 "$log" >&2
  done
  echo "aws-local: logs: $STATE/moto.log, $STATE/lambda.log" >&2
  "$0" stop >/dev/null 2>&1 || true
  exit 1
}

# Start `cargo lambda watch` as NAME on PORT serving the catalog TEMPLATES (extra
# --env-var options after it), unless it runs already.
start_watch() { # name port port-variable templates [--env-var VAR=value]...
  local name=$1 port=$2 variable=$3 templates=$4
  shift 4
  if running "$name" "lambda watch" >/dev/null; then
    echo "aws-local: $name (cargo lambda watch) already running"
    return
  fi
  port_taken "$port" && refuse "port $port is taken by another process ($variable)"
  local reload=(--ignore-changes)
  [ "${SWITCHYARD_LAMBDA_RELOAD:-0}" = 1 ] && reload=()
  # From the repository root, so it serves the workspace's binaries.
  setsid cargo lambda watch \
    --invoke-address 127.0.0.1 --invoke-port "$port" \
    "${reload[@]}" \
    --env-var "SWITCHYARD_TEMPLATES=$templates" \
    --env-var "RUST_LOG=${RUST_LOG:-info}" \
    "$@" \
    >"$STATE/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/$name.pid"
}

start() {
  for cmd in moto_server cargo-lambda curl setsid; do
    command -v "$cmd" >/dev/null || {
      echo "aws-local: $cmd not found (looked in $SWITCHYARD_VENV/bin and PATH); run ./infra/scripts/aws-tools.sh first" >&2
      exit 1
    }
  done
  mkdir -p "$STATE"

  if running moto moto_server >/dev/null; then
    echo "aws-local: moto already running"
  else
    port_taken "$MOTO_PORT" && refuse "port $MOTO_PORT is taken by another process (SWITCHYARD_MOTO_PORT)"
    # setsid: its own process group, so `stop` ends it and everything it started.
    setsid moto_server -H 127.0.0.1 -p "$MOTO_PORT" >"$STATE/moto.log" 2>&1 </dev/null &
    echo $! >"$STATE/moto.pid"
  fi

  if running moto-iam moto_server >/dev/null; then
    echo "aws-local: moto (IAM enforced) already running"
  else
    port_taken "$MOTO_IAM_PORT" && refuse "port $MOTO_IAM_PORT is taken by another process (SWITCHYARD_MOTO_IAM_PORT)"
    # Authentication starts after this many requests; the tests switch it off for their
    # set-up and on for their calls (/moto-api/reset-auth).
    INITIAL_NO_AUTH_ACTION_COUNT=0 setsid moto_server -H 127.0.0.1 -p "$MOTO_IAM_PORT" \
      >"$STATE/moto-iam.log" 2>&1 </dev/null &
    echo $! >"$STATE/moto-iam.pid"
  fi

  start_watch lambda "$LAMBDA_PORT" SWITCHYARD_LAMBDA_PORT "$ROOT/templates/demo"
  local sql_env=(--env-var "SWITCHYARD_TEST_WEB_URL=$WEB_URL")
  [ -n "${SWITCHYARD_TEST_MYSQL_URL:-}" ] &&
    sql_env+=(--env-var "SWITCHYARD_TEST_MYSQL_URL=$SWITCHYARD_TEST_MYSQL_URL")
  start_watch lambda-sql "$LAMBDA_SQL_PORT" SWITCHYARD_LAMBDA_SQL_PORT \
    "$ROOT/tests/data/catalogs/servers" "${sql_env[@]}"

  local deadline=$((SECONDS + TIMEOUT))
  until moto_up && moto_iam_up && lambda_up && lambda_sql_up; do
    alive moto || fail_start "moto_server exited"
    alive moto-iam || fail_start "moto_server (IAM enforced) exited"
    alive lambda || fail_start "cargo lambda watch exited"
    alive lambda-sql || fail_start "the second cargo lambda watch exited"
    [ "$SECONDS" -lt "$deadline" ] || fail_start "not answering after ${TIMEOUT}s (SWITCHYARD_AWS_LOCAL_TIMEOUT)"
    sleep 0.5
  done
  echo "aws-local: moto on $MOTO_URL, moto enforcing IAM on $MOTO_IAM_URL, cargo lambda watch on $LAMBDA_URL and $LAMBDA_SQL_URL (logs in $STATE)"
}

case "${1:-}" in
  start) start ;;
  stop)
    stop_one lambda-sql "lambda watch"
    stop_one lambda "lambda watch"
    stop_one moto-iam moto_server
    stop_one moto moto_server
    echo "aws-local: stopped"
    ;;
  status)
    up=0
    if running moto moto_server >/dev/null && moto_up; then echo "moto: $MOTO_URL"; else echo "moto: down"; up=1; fi
    if running moto-iam moto_server >/dev/null && moto_iam_up; then echo "moto (IAM enforced): $MOTO_IAM_URL"; else echo "moto (IAM enforced): down"; up=1; fi
    if running lambda "lambda watch" >/dev/null && lambda_up; then echo "lambda: $LAMBDA_URL"; else echo "lambda: down"; up=1; fi
    if running lambda-sql "lambda watch" >/dev/null && lambda_sql_up; then echo "lambda (servers catalog): $LAMBDA_SQL_URL"; else echo "lambda (servers catalog): down"; up=1; fi
    exit "$up"
    ;;
  env)
    cat <<EOF
export AWS_ENDPOINT_URL=$MOTO_URL
export AWS_ENDPOINT_URL_LAMBDA=$LAMBDA_URL
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export SWITCHYARD_TEST_MOTO_URL=$MOTO_URL
export SWITCHYARD_TEST_LAMBDA_URL=$LAMBDA_URL
export SWITCHYARD_TEST_MOTO_IAM_URL=$MOTO_IAM_URL
export SWITCHYARD_TEST_LAMBDA_SQL_URL=$LAMBDA_SQL_URL
export SWITCHYARD_TEST_WEB_URL=$WEB_URL
EOF
    ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
