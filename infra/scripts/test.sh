#!/usr/bin/env bash
# Set up everything the tests need, then run them all: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/../.."
# A one-off build gains nothing from incremental caches; they would double the target's size.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
# Everything is built for the host's target named explicitly, as cargo-lambda builds the
# functions for `sam build` (x86_64-unknown-linux-gnu): one target directory,
# target/<triple>/debug, so that build finds the workspace's crates compiled instead of
# compiling them again (DuckDB's C++ alone takes 13 to 15 minutes).
CARGO_BUILD_TARGET="$(rustc -vV | sed -n 's/^host: //p')"
export CARGO_BUILD_TARGET
export SWITCHYARD_BIN="$PWD/target/$CARGO_BUILD_TARGET/debug/switchyard"
# DuckDB's bundled C++ is the longest single compile: clang compiles it about 40% faster
# than gcc at -O0 (one of its unity files: 39 s against 64 s here). Installed as root where
# missing (Debian's clang); used where present.
if ! command -v clang++ >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing clang from Debian's packages (for DuckDB's C++)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null ||
    echo "test.sh: clang not installed; gcc compiles DuckDB" >&2
fi
if command -v clang++ >/dev/null 2>&1; then
  export CXX="${CXX:-clang++}"
fi
# A build, the Python tools and the model take about 4 GB; a full disk shows up as a linker crash.
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
if [ "${free_kb:-0}" -lt 5000000 ]; then
  echo "test.sh: warning: only $((free_kb / 1024)) MB free here; the build and tools need about 4 GB" >&2
fi

# The Python tools live in the project virtualenv (infra/scripts/venv.sh): its bin/ first
# on PATH for this script and everything it runs.
. infra/scripts/venv.sh

# What only downloads and installs runs beside the compiler, which has the CPUs to itself
# otherwise: the model and the AWS tools (pip, one after the other: one virtualenv), and
# Debian's packages for the servers and the Lambda base image (apt, one after the other:
# one dpkg lock). Each logs to its file and is waited for before its first use.
LOGS=$(mktemp -d)
background() { # name command...
  local name=$1
  shift
  # The status file appears whole when the step ends (written aside, then renamed): a
  # redirection would create it empty at the start, and `await` would read a failure.
  ( if "$@" >"$LOGS/$name.log" 2>&1; then status=0; else status=$?; fi
    echo "$status" >"$LOGS/$name.status.part" && mv "$LOGS/$name.status.part" "$LOGS/$name.status" ) &
}
await() { # name
  while [ ! -f "$LOGS/$1.status" ]; do sleep 1; done
  cat "$LOGS/$1.log"
  if [ "$(cat "$LOGS/$1.status")" != 0 ]; then
    echo "test.sh: FAILED: the $1 set-up (its log above)" >&2
    exit 1
  fi
}
# (`set -e` does not reach inside an `if`: each step is chained with &&.)
python_tools() {
  ./infra/scripts/fetch-model.sh && ./infra/scripts/aws-tools.sh
}
system_packages() {
  ./infra/scripts/postgres.sh install && ./infra/scripts/mariadb.sh install &&
    # Chromium and its driver, for the report's browser check (report-check.sh).
    if [ "$(id -u)" = 0 ]; then ./infra/scripts/report-check.sh install; fi &&
    if docker_usable; then ./infra/scripts/lambda-base-image.sh; fi
}
# The SAM checks run where a Docker Engine answers and the base image can be had (root
# builds it once).
BASE_IMAGE="switchyard/lambda-provided:al2023-x86_64"
docker_usable() {
  command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 &&
    { [ "$(id -u)" = 0 ] || docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; }
}
background python-tools python_tools
background system-packages system_packages

cargo fmt --all -- --check
# No crate's top-level modules import each other in a loop (issue 28).
python3 infra/scripts/module-loops.py
# No library crate re-exports another crate's items: each is imported from its owner
# (ARCHITECTURE.md, "Crates").
if grep -rnE --include='*.rs' '^\s*pub(\([a-z]+\))? use switchyard_' shared functions; then
  echo "test.sh: FAILED: the lines above re-export another crate's items; import them from their crate instead" >&2
  exit 1
fi
# The adapter function links no router code, no HNSW and no ONNX Runtime (ARCHITECTURE.md,
# "Crates"): what it runs is the contract, the adapters and the artifacts' reader.
if cargo tree -p switchyard-adapter -e normal --prefix none |
  grep -E '^(switchyard-(index|routing|core|embed|eval|http|aws)|instant-distance|ort) '; then
  echo "test.sh: FAILED: the adapter function depends on the crates above; see ARCHITECTURE.md, Crates" >&2
  exit 1
fi
# `sam build` of each function reuses the dependencies compiled here (shared/feature-union).
python3 infra/scripts/feature-union.py

# Clippy lints the workspace's crates while they are compiled, as `cargo clippy` does
# (clippy-driver as cargo's wrapper for workspace members, CLIPPY_ARGS its options), over
# every target the tests build and the benches. A separate `cargo clippy` would compile
# every dependency a second time in check mode: about a third of the run. Exported for the
# whole script, so cargo lambda watch and sam build find these same crates compiled.
RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# CLIPPY_ARGS is clippy's own convention, not a documented interface: check that a clean
# file compiles and a lint fails one before relying on it.
canary() { # source
  local dir
  dir=$(mktemp -d)
  printf '%s\n' "$1" >"$dir/canary.rs"
  "$RUSTC_WORKSPACE_WRAPPER" rustc --edition 2021 --crate-type bin --emit=metadata \
    -o "$dir/canary" "$dir/canary.rs" >/dev/null 2>&1
}
if ! canary 'fn main() { println!("{}", std::env::args().count()); }' ||
  canary 'fn main() { let v = vec![1]; let _ = v.len() == 0; }'; then
  echo "test.sh: FAILED: clippy-driver (${RUSTC_WORKSPACE_WRAPPER:-not found}) does not lint with CLIPPY_ARGS; use cargo clippy --workspace --all-targets -- -D warnings" >&2
  exit 1
fi
# --timings: target/cargo-timings/ says where the compile time went.
cargo test --workspace --all-targets --no-run --timings
# The tests run binaries (the CLI; the adapter under cargo lambda watch).
cargo build --workspace --bins

# The AWS tooling (moto_server, cargo-lambda, cfn-lint, sam) and the template's lint.
await python-tools
./infra/scripts/lint-template.sh
await system-packages

# Real servers on 127.0.0.1, stopped on exit: PostgreSQL and MariaDB for the SQL adapter,
# moto_server for S3 and DynamoDB, cargo lambda watch for Lambda invokes.
cleanup() {
  ./infra/scripts/aws-local.sh stop || true
  ./infra/scripts/postgres.sh stop || true
  ./infra/scripts/mariadb.sh stop || true
}
trap cleanup EXIT
./infra/scripts/postgres.sh start
export SWITCHYARD_TEST_PG_URL="postgres://postgres@127.0.0.1:${SWITCHYARD_PG_PORT:-55432}/ev"
export SWITCHYARD_TEST_PG_CA="/tmp/switchyard-pg-${SWITCHYARD_PG_PORT:-55432}/tls/ca.pem"
./infra/scripts/mariadb.sh start
export SWITCHYARD_TEST_MYSQL_URL="mysql://root@127.0.0.1:${SWITCHYARD_MARIADB_PORT:-53306}/ev"
export SWITCHYARD_TEST_MYSQL_CA="/tmp/switchyard-mariadb-${SWITCHYARD_MARIADB_PORT:-53306}/tls/ca.pem"
./infra/scripts/aws-local.sh start
eval "$(./infra/scripts/aws-local.sh env)"
# The first invoke starts the adapter binary; do it before the tests' deadlines count.
curl -fsS --max-time 600 -o /dev/null \
  -d '{"request_id":"warm-up","datasource":"tools","template_id":"calculator_percentage","query":"What is 15% of 200?","session_parameters":{},"deadline_ms":5000}' \
  "$SWITCHYARD_TEST_LAMBDA_URL/2015-03-31/functions/switchyard-adapter/invocations"

cargo test --workspace

# The servers below load the demo catalog's cached index: build it (on a fresh machine,
# adapting the encoder to the catalog, about 2 minutes) before their start deadlines count.
"$SWITCHYARD_BIN" --templates templates/demo stats >/dev/null

# API conformance: schemathesis against the served OpenAPI document (bounded, ~1 minute;
# a fixed seed here, so a failure replays: the script alone draws a new one each run).
SCHEMATHESIS_SEED="${SCHEMATHESIS_SEED:-20261124}" ./infra/scripts/schemathesis.sh

# The OpenAI-compatible endpoints with the official OpenAI client.
./infra/scripts/chat-clients.sh

# `eval --report` opened in headless Chromium: rendered, charts drawn, no console error.
./infra/scripts/report-check.sh

# SAM as its users run it: `sam local invoke` and `sam local start-api` in containers of a
# base image built here (no registry). Needs a Docker Engine, and root the first time (the
# base image is made with debootstrap). A developer's machine without them says so and
# goes on; under CI (CI=true) they are required: a run that skipped them would pass
# without having checked the shape users deploy.
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
