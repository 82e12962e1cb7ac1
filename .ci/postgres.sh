#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server on 127.0.0.1 for the study tests (Debian's postgresql package;
# initdb and pg_ctl run as the postgres user). Prints the storage URL; `.ci/postgres.sh stop DIR` stops it.
set -euo pipefail
if [ "${1:-}" = "stop" ]; then
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  su postgres -c "$bin/pg_ctl -D '$2' -m fast stop" >/dev/null 2>&1 || true
  rm -rf "$2"
  exit 0
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
data=$(mktemp -d /tmp/edgeplan-pg.XXXXXX)
chown postgres "$data"
port=${EDGEPLAN_PG_PORT:-54329}
su postgres -c "$bin/initdb -D '$data' -A trust -U postgres" >/dev/null
su postgres -c "$bin/pg_ctl -D '$data' -o '-p $port -c listen_addresses=127.0.0.1 -k /tmp' -l '$data/log' -w start" >/dev/null
su postgres -c "psql -h 127.0.0.1 -p $port -U postgres -qc 'CREATE DATABASE edgeplan'" >/dev/null
echo "$data postgresql+psycopg://postgres@127.0.0.1:$port/edgeplan"
