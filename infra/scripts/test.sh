#!/usr/bin/env bash
# Set up everything the tests need, then run them all: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/../.."
# A one-off build gains nothing from incremental caches; they would double the target's size.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
# A build, the Python tools and the model take about 4 GB; a full disk shows up as a linker crash.
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
if [ "${free_kb:-0}" -lt 5000000 ]; then
  echo "test.sh: warning: only $((free_kb / 1024)) MB free here; the build and tools need about 4 GB" >&2
fi

# The Python tools live in the project virtualenv (infra/scripts/venv.sh): its bin/ first
# on PATH for this script and everything it runs.
. infra/scripts/venv.sh

./infra/scripts/fetch-model.sh
cargo fmt --all -- --check
# No crate's top-level modules import each other in a loop (issue 28).
python3 infra/scripts/module-loops.py
cargo clippy --workspace --all-targets -- -D warnings

# The AWS tooling (moto_server, cargo-lambda, cfn-lint, sam) and the template's lint.
./infra/scripts/aws-tools.sh
./infra/scripts/lint-template.sh

# The tests run binaries (the CLI; the adapter under cargo lambda watch): build them first.
cargo build --workspace --bins

# Real servers on 127.0.0.1, stopped on exit: PostgreSQL for the SQL adapter, moto_server
# for S3 and DynamoDB, cargo lambda watch for Lambda invokes.
cleanup() {
  ./infra/scripts/aws-local.sh stop || true
  ./infra/scripts/postgres.sh stop || true
}
trap cleanup EXIT
./infra/scripts/postgres.sh start
export SWITCHYARD_TEST_PG_URL="postgres://postgres@127.0.0.1:${SWITCHYARD_PG_PORT:-55432}/ev"
./infra/scripts/aws-local.sh start
eval "$(./infra/scripts/aws-local.sh env)"
# The first invoke starts the adapter binary; do it before the tests' deadlines count.
curl -fsS --max-time 600 -o /dev/null \
  -d '{"request_id":"warm-up","datasource":"tools","template_id":"calculator_percentage","query":"What is 15% of 200?","session_parameters":{},"deadline_ms":5000}' \
  "$SWITCHYARD_TEST_LAMBDA_URL/2015-03-31/functions/switchyard-adapter/invocations"

cargo test --workspace

# The servers below load the demo catalog's cached index: build it (on a fresh machine,
# adapting the encoder to the catalog, about 2 minutes) before their start deadlines count.
./target/debug/switchyard --templates templates/demo stats >/dev/null

# API conformance: schemathesis against the served OpenAPI document (bounded, ~1 minute;
# a fixed seed here, so a failure replays: the script alone draws a new one each run).
SCHEMATHESIS_SEED="${SCHEMATHESIS_SEED:-20261124}" ./infra/scripts/schemathesis.sh

# The OpenAI-compatible endpoints with the official OpenAI client.
./infra/scripts/chat-clients.sh

# SAM as its users run it: `sam local invoke` and `sam local start-api` in containers of a
# base image built here (no registry). Needs a Docker Engine, and root the first time (the
# base image is made with debootstrap). A developer's machine without them says so and
# goes on; under CI (CI=true) they are required: a run that skipped them would pass
# without having checked the shape users deploy.
BASE_IMAGE="switchyard/lambda-provided:al2023-x86_64"
sam_skipped() { # reason
  if [ "${CI:-}" = true ]; then
    echo "test.sh: FAILED: the SAM local checks (infra/scripts/sam-local.sh) are required under CI=true: $1" >&2
    exit 1
  fi
  echo "test.sh: SKIPPED the SAM local checks (infra/scripts/sam-local.sh): $1" >&2
}
if ! { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }; then
  sam_skipped "no Docker Engine answers here"
elif [ "$(id -u)" != 0 ] && ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  sam_skipped "building $BASE_IMAGE needs root once (sudo ./infra/scripts/lambda-base-image.sh)"
else
  ./infra/scripts/sam-local.sh
fi
