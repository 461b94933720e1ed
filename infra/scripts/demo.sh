#!/usr/bin/env bash
# Set up and run the local API on the embedded defaults (the demo catalog), ask it a
# sample question, then keep serving on http://127.0.0.1:${PORT:-8080} until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${PORT:-8080}"

./infra/scripts/fetch-model.sh
# Into target/debug, where the README's commands find the binary (test.sh builds into
# target/<host triple>/debug, as cargo-lambda does for `sam build`). DuckDB's C++ compiles
# about 40% faster with clang than with gcc: used where installed.
if command -v clang++ >/dev/null 2>&1; then export CXX="${CXX:-clang++}"; fi
cargo build --workspace --bins
# The demo catalog's index, cached: on the first run this adapts the encoder to the
# catalog (about 2 minutes on 2 cores, embedding.adaptation), later runs reuse it.
./target/debug/switchyard stats >/dev/null
./target/debug/switchyard serve --port "$PORT" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT INT TERM

for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/v1/health" >/dev/null 2>&1 && break
  sleep 1
done

ask() {
  echo
  echo "\$ curl -s -X POST http://127.0.0.1:$PORT$1 -d '$2'"
  curl -s -X POST "http://127.0.0.1:$PORT$1" -H 'content-type: application/json' -d "$2" | python3 -m json.tool
}
ask /v1/query '{"query": "How many employees work in Engineering?"}'
ask /v1/query '{"query": "What is 15% of 200?"}'
# The ev datasource: DuckDB over a CSV file, embedded in the process.
ask /v1/query '{"query": "How many Teslas are registered?"}'
# Two things at once: split, run in parallel, fused (metadata.orchestration).
ask /v1/query '{"query": "How many employees work in Sales and what is 15% of 200?"}'
# A documents datasource: the policy passages that answer, both products when two are named.
ask /v1/query '{"query": "Compare the no-claim discount of car and home cover"}'
echo
echo "Serving on http://127.0.0.1:$PORT (POST /v1/query, POST /v1/route, GET /v1/stats, GET /v1/health, GET /v1/openapi.json, POST /v1/chat/completions, POST /mcp). Ctrl-C stops."
wait $server
