# Sourced by the scripts that check the API against a live server (schemathesis.sh,
# chat-clients.sh), not run. demo_server_start BIN LOG starts `BIN serve` on the demo
# catalog with the embedded configuration (whatever the caller's environment says; a third
# argument names a configuration file merged over it), on a
# free port of 127.0.0.1, and waits for the line saying where it listens: it sets
# SERVER_PID and PORT, or returns non-zero with the log's end on stderr.
# demo_server_stop stops it (call it from the caller's EXIT trap).

SERVER_PID=""
PORT=""

demo_server_start() { # BIN LOG [CONFIG]
  env -u SWITCHYARD_TEMPLATES -u SWITCHYARD_INDEX -u SWITCHYARD_CONFIG \
    "$1" serve --host 127.0.0.1 --port 0 --templates templates/demo ${3:+--config "$3"} >"$2" 2>&1 &
  SERVER_PID=$!
  # A first run on a fresh machine adapts the encoder to the demo catalog (about 2 minutes).
  for _ in $(seq 1 720); do
    PORT=$(sed -n 's|^switchyard listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$2")
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$2" >&2; echo "the server exited" >&2; return 1; }
    sleep 0.5
  done
  tail -n 20 "$2" >&2
  echo "the server did not listen within 360 s" >&2
  return 1
}

demo_server_stop() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
