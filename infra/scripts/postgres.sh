#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests, on 127.0.0.1 only:
#   postgres.sh install install from Debian's packages if missing (test.sh: while it compiles)
#   postgres.sh start   install if needed, init, start, load the EV sample
#   postgres.sh stop    stop it and delete its data
# It listens on $SWITCHYARD_PG_PORT (default 55432); the URL of the loaded database is
# postgres://postgres@127.0.0.1:$SWITCHYARD_PG_PORT/ev
# TLS is on, with a certificate for 127.0.0.1 from a test CA (test-certs.sh), whose
# certificate is $DATA/tls/ca.pem. The role tls_only may read `ev` over TLS alone, as on
# a server that forces TLS (RDS's rds.force_ssl).
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${SWITCHYARD_PG_PORT:-55432}"
DATA="/tmp/switchyard-pg-$PORT"

bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install() {
  if [ -z "$(bin_dir)" ]; then
    echo "postgres: installing from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
}

case "${1:-}" in
  install)
    install
    ;;
  start)
    install
    BIN="$(bin_dir)"
    as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
    if [ -f "$DATA/postmaster.pid" ]; then
      as_postgres "$BIN/pg_ctl" -D "$DATA" stop -m fast >/dev/null 2>&1 || true
    fi
    rm -rf "$DATA"
    mkdir -p "$DATA"
    [ "$(id -u)" = 0 ] && chown postgres "$DATA"
    as_postgres "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null
    ./infra/scripts/test-certs.sh "$DATA/tls"
    [ "$(id -u)" = 0 ] && chown -R postgres "$DATA/tls"
    # The first matching line wins: tls_only without TLS is refused.
    sed -i '1i hostnossl all tls_only 127.0.0.1/32 reject' "$DATA/pg_hba.conf"
    # Right after Debian's package is installed the first start has failed once here
    # (pg_ctl: "Examine the log output"): show the log and try once more.
    start_server() {
      as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DATA -c ssl=on \
          -c ssl_cert_file=$DATA/tls/server.pem -c ssl_key_file=$DATA/tls/server.key" \
        -w start >/dev/null
    }
    if ! start_server; then
      echo "postgres: the first start failed; its log:" >&2
      tail -n 20 "$DATA/server.log" >&2 || true
      sleep 2
      start_server
    fi
    psql -q -h 127.0.0.1 -p "$PORT" -U postgres -c "CREATE DATABASE ev" >/dev/null
    PGOPTIONS="-c client_min_messages=warning" psql -q -h 127.0.0.1 -p "$PORT" -U postgres -d ev -v ON_ERROR_STOP=1 -f templates/demo/ev/data/ev.sql >/dev/null
    psql -q -h 127.0.0.1 -p "$PORT" -U postgres -d ev -v ON_ERROR_STOP=1 \
      -c "CREATE ROLE tls_only LOGIN" -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO tls_only" >/dev/null
    echo "postgres: postgres://postgres@127.0.0.1:$PORT/ev (TLS CA: $DATA/tls/ca.pem)"
    ;;
  stop)
    BIN="$(bin_dir)"
    if [ -n "$BIN" ] && [ -f "$DATA/postmaster.pid" ]; then
      if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" stop -m fast >/dev/null
      else "$BIN/pg_ctl" -D "$DATA" stop -m fast >/dev/null; fi
    fi
    rm -rf "$DATA"
    echo "postgres: stopped"
    ;;
  *)
    echo "usage: $0 install|start|stop" >&2
    exit 2
    ;;
esac
