#!/usr/bin/env bash
# A throwaway MariaDB for the tests, on 127.0.0.1 only:
#   mariadb.sh install install from Debian's packages if missing (test.sh: while it compiles)
#   mariadb.sh start   install if needed, init, start, load the EV sample
#   mariadb.sh stop    stop it and delete its data
# It listens on $SWITCHYARD_MARIADB_PORT (default 53306); the URL of the loaded database is
# mysql://root@127.0.0.1:$SWITCHYARD_MARIADB_PORT/ev (root without a password, over TCP on
# loopback: the tests also check that the adapter's guards stop writes a privileged user
# could make). TLS is on, with a certificate for 127.0.0.1 from a test CA (test-certs.sh),
# whose certificate is $DATA/tls/ca.pem; the user tls_only may read `ev` over TLS alone
# (REQUIRE SSL).
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${SWITCHYARD_MARIADB_PORT:-53306}"
DATA="/tmp/switchyard-mariadb-$PORT"
SOCKET="$DATA/mariadb.sock"

client() { mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT" -u root "$@"; }

stop_server() {
  if [ -f "$DATA/mariadb.pid" ]; then
    local pid
    pid=$(cat "$DATA/mariadb.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

install() {
  if [ ! -x /usr/sbin/mariadbd ]; then
    echo "mariadb: installing from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  fi
}

case "${1:-}" in
  install)
    install
    ;;
  start)
    install
    stop_server
    rm -rf "$DATA"
    mkdir -p "$DATA"
    # The server runs as whoever starts it (root in CI, with --user=root); nothing of the
    # system's own MariaDB configuration is read (--no-defaults).
    user=$(id -un)
    mariadb-install-db --no-defaults --user="$user" --datadir="$DATA/db" \
      --auth-root-authentication-method=normal --skip-test-db >"$DATA/install.log" 2>&1 || {
      tail -n 20 "$DATA/install.log" >&2
      exit 1
    }
    ./infra/scripts/test-certs.sh "$DATA/tls"
    /usr/sbin/mariadbd --no-defaults --user="$user" --datadir="$DATA/db" \
      --ssl-ca="$DATA/tls/ca.pem" --ssl-cert="$DATA/tls/server.pem" --ssl-key="$DATA/tls/server.key" \
      --bind-address=127.0.0.1 --port="$PORT" --socket="$SOCKET" --pid-file="$DATA/mariadb.pid" \
      --log-error="$DATA/server.log" --skip-name-resolve --innodb-buffer-pool-size=32M \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
      >/dev/null 2>&1 &
    for _ in $(seq 1 300); do
      client -e "SELECT 1" >/dev/null 2>&1 && break
      sleep 0.1
    done
    client -e "SELECT 1" >/dev/null 2>&1 || {
      echo "mariadb: the server did not start; its log:" >&2
      tail -n 20 "$DATA/server.log" >&2
      exit 1
    }
    client -e "CREATE DATABASE ev"
    client ev <templates/demo/ev/data/ev.sql
    client -e "CREATE USER tls_only@'127.0.0.1' REQUIRE SSL; GRANT SELECT ON ev.* TO tls_only@'127.0.0.1'"
    echo "mariadb: mysql://root@127.0.0.1:$PORT/ev (TLS CA: $DATA/tls/ca.pem)"
    ;;
  stop)
    stop_server
    rm -rf "$DATA"
    echo "mariadb: stopped"
    ;;
  *)
    echo "usage: $0 install|start|stop" >&2
    exit 2
    ;;
esac
