#!/usr/bin/env bash
# Faults during load, on the real emulators: functions/router/tests/faults/ with more
# requests, its table printed (docs/reliability.md, "Faults during load").
# The test runs the router Lambda's app in process against a moto_server of its own (a
# free port of 127.0.0.1; it pauses, kills and restarts that one, never the shared one)
# and the shared `cargo lambda watch` (the adapter function). This script starts the
# shared emulators (./infra/scripts/aws-local.sh) when they are not running, and on exit
# stops the ones it started.
#   SWITCHYARD_FAULT_REQUESTS   requests per client and phase, 8 clients (default here 40;
#                               the test alone, as in `cargo test`, sends 8)
# Exits non-zero when the test fails (a malformed answer, a panic, a 500, a lost turn, or
# a fault whose effect is not the documented one).
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh
REQUESTS="${SWITCHYARD_FAULT_REQUESTS:-40}"
case "$REQUESTS" in ''|*[!0-9]*|0) echo "faults: SWITCHYARD_FAULT_REQUESTS must be a positive number" >&2; exit 2 ;; esac
STATE="/tmp/switchyard-aws-local"

./infra/scripts/fetch-model.sh >/dev/null
if ! command -v moto_server >/dev/null || ! command -v cargo-lambda >/dev/null; then
  ./infra/scripts/aws-tools.sh
fi

# Which of the two run already: only the others are ours to stop.
status="$(./infra/scripts/aws-local.sh status || true)"
ours=()
grep -q '^moto: down' <<<"$status" && ours+=(moto)
grep -q '^lambda: down' <<<"$status" && ours+=(lambda)
stop_ours() {
  if [ "${#ours[@]}" -eq 2 ]; then
    ./infra/scripts/aws-local.sh stop || true
    return
  fi
  # One of them: its process group, as aws-local.sh stop ends it.
  for name in "${ours[@]}"; do
    pid="$(cat "$STATE/$name.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
      rm -f "$STATE/$name.pid"
      echo "faults: stopped $name"
    fi
  done
}
if [ "${#ours[@]}" -gt 0 ]; then
  trap stop_ours EXIT
  ./infra/scripts/aws-local.sh start
else
  echo "faults: the shared emulators run already; left running"
fi
eval "$(./infra/scripts/aws-local.sh env)"

# The adapter binary must be built before cargo lambda watch can run it (its first invoke
# builds it otherwise, and the test's warm-up would wait for that).
cargo build --bin switchyard-adapter
curl -fsS --max-time 600 -o /dev/null \
  -d '{"request_id":"warm-up","datasource":"tools","template_id":"calculator_percentage","query":"What is 15% of 200?","session_parameters":{},"deadline_ms":5000}' \
  "$SWITCHYARD_TEST_LAMBDA_URL/2015-03-31/functions/switchyard-adapter/invocations"

SWITCHYARD_FAULT_REQUESTS="$REQUESTS" \
  cargo test -p switchyard-router --test faults -- --nocapture --test-threads 1
