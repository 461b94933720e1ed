#!/usr/bin/env bash
# Set up everything the tests need, then run them all: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/../.."

./infra/scripts/fetch-model.sh
cargo fmt --all -- --check

# A real PostgreSQL on 127.0.0.1 for the SQL adapter's tests, stopped on exit.
./infra/scripts/postgres.sh start
trap './infra/scripts/postgres.sh stop' EXIT
export SWITCHYARD_TEST_PG_URL="postgres://postgres@127.0.0.1:${SWITCHYARD_PG_PORT:-55432}/ev"

# The end-to-end tests run the `switchyard` binary, so build it first.
cargo build --workspace --bins
cargo test --workspace
