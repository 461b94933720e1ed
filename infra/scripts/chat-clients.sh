#!/usr/bin/env bash
# The OpenAI-compatible endpoints with the real OpenAI Python client (PyPI `openai`, pinned
# below, in the project virtualenv): `switchyard serve` on the demo catalog, on 127.0.0.1
# only, then infra/scripts/chat_clients.py, which lists the models, asks a question,
# streams one, follows an assistant's offer through `messages`, and checks the error shape.
#   SWITCHYARD_BIN   the binary (default target/debug/switchyard)
# Exits non-zero, saying which check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh

OPENAI_VERSION="3.57.0"
BIN="${SWITCHYARD_BIN:-$(pwd)/target/debug/switchyard}"
WORK="$(mktemp -d)"
. infra/scripts/demo-server.sh
fail() {
  echo "chat-clients: $*" >&2
  exit 1
}
stop() {
  demo_server_stop
  rm -rf "$WORK"
}
trap stop EXIT

[ -x "$BIN" ] || fail "$BIN not found; cargo build --bin switchyard"
venv_ensure
python="$SWITCHYARD_VENV/bin/python"
if [ "$("$python" -c 'from importlib.metadata import version; print(version("openai"))' 2>/dev/null)" != "$OPENAI_VERSION" ]; then
  echo "chat-clients: installing openai==$OPENAI_VERSION into $SWITCHYARD_VENV"
  PIP_USER=0 "$python" -m pip install --quiet --disable-pip-version-check "openai==$OPENAI_VERSION" ||
    fail "pip could not install openai==$OPENAI_VERSION"
fi
./infra/scripts/fetch-model.sh >/dev/null

demo_server_start "$BIN" "$WORK/server.log" || fail "the server did not start (above)"

"$python" infra/scripts/chat_clients.py "http://127.0.0.1:$PORT/v1" || fail "a check failed (above)"
echo "chat-clients: passed"
