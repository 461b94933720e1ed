#!/usr/bin/env bash
# Set up everything the tests need, then run them all: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/../.."

./infra/scripts/fetch-model.sh
cargo fmt --all -- --check
# The end-to-end tests run the `switchyard` binary, so build it first.
cargo build --workspace --bins
cargo test --workspace
