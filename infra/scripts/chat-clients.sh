#!/usr/bin/env bash
# The endpoints agents and chat apps use, with their real clients from PyPI (pinned below,
# in the project virtualenv): `switchyard serve` on the demo catalog, on 127.0.0.1 only.
# infra/scripts/chat_clients.py (the `openai` package) lists the models, asks a question,
# streams one, follows an assistant's offer through `messages`, and checks the error shape;
# infra/scripts/mcp_clients.py (the `mcp` package) lists the MCP tools, asks, follows up in a
# session, and checks refusals and access, against a second server whose `auth` gives one
# key every datasource and another only `tools`; infra/scripts/a2a_clients.py (the `a2a-sdk`
# package) resolves the A2A agent card and sends messages to the same server.
#   SWITCHYARD_BIN   the binary (default target/debug/switchyard)
# Exits non-zero, saying which check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh

OPENAI_VERSION="3.57.0"
MCP_VERSION="2.3.0"
A2A_VERSION="1.3.0"
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
if [ "$("$python" -c 'from importlib.metadata import version; print(version("mcp"))' 2>/dev/null)" != "$MCP_VERSION" ]; then
  echo "chat-clients: installing mcp==$MCP_VERSION into $SWITCHYARD_VENV"
  PIP_USER=0 "$python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" ||
    fail "pip could not install mcp==$MCP_VERSION"
fi
if [ "$("$python" -c 'from importlib.metadata import version; print(version("a2a-sdk"))' 2>/dev/null)" != "$A2A_VERSION" ]; then
  echo "chat-clients: installing a2a-sdk==$A2A_VERSION into $SWITCHYARD_VENV"
  PIP_USER=0 "$python" -m pip install --quiet --disable-pip-version-check "a2a-sdk==$A2A_VERSION" ||
    fail "pip could not install a2a-sdk==$A2A_VERSION"
fi
./infra/scripts/fetch-model.sh >/dev/null

demo_server_start "$BIN" "$WORK/server.log" || fail "the server did not start (above)"

"$python" infra/scripts/chat_clients.py "http://127.0.0.1:$PORT/v1" || fail "a check failed (above)"
demo_server_stop

# MCP with access control: two keys, one for every datasource, one for `tools` only.
ALL_KEY="mcp-all-$$"
TOOLS_KEY="mcp-tools-$$"
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
cat >"$WORK/auth.yaml" <<YAML
auth:
  required: true
  api_keys:
    $(sha "$ALL_KEY"): everyone
    $(sha "$TOOLS_KEY"): calculator-only
  principals:
    everyone: ["*"]
    calculator-only: [tools]
YAML
demo_server_start "$BIN" "$WORK/mcp-server.log" "$WORK/auth.yaml" ||
  fail "the server with auth did not start (above)"
"$python" infra/scripts/mcp_clients.py "http://127.0.0.1:$PORT/mcp" "$ALL_KEY" "$TOOLS_KEY" ||
  fail "an MCP check failed (above; server log $WORK/mcp-server.log)"
"$python" infra/scripts/chat_clients.py "http://127.0.0.1:$PORT/v1" --restricted "$TOOLS_KEY" ||
  fail "a chat check with auth failed (above; server log $WORK/mcp-server.log)"
"$python" infra/scripts/a2a_clients.py --base-url "http://127.0.0.1:$PORT" \
  --key "$ALL_KEY" --restricted-key "$TOOLS_KEY" ||
  fail "an A2A check failed (above; server log $WORK/mcp-server.log)"
echo "chat-clients: passed"
