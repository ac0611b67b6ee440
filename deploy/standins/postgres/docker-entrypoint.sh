#!/usr/bin/env bash
# The official image's contract, for the parts BuzzKit's compose file relies on: an empty
# $PGDATA is initialised with $POSTGRES_USER (default postgres) as superuser, password
# $POSTGRES_PASSWORD (scram-sha-256 from other hosts; trust on the local socket) and database
# $POSTGRES_DB (default: the user's name); the server listens on every address, as postgres.
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi
user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || [ "${POSTGRES_HOST_AUTH_METHOD:-}" = trust ] \
    || { echo "error: POSTGRES_PASSWORD is not set" >&2; exit 1; }
  initdb --username="$user" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") -E UTF8 --locale=C.UTF-8 \
    ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA" >/dev/null
  printf '\nlisten_addresses = '"'"'*'"'"'\n' >>"$PGDATA/postgresql.conf"
  printf 'local all all trust\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /var/run/postgresql" -w start >/dev/null
  if [ "$database" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U "$user" -d postgres -qc "CREATE DATABASE \"$database\"" >/dev/null
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres stand-in: initialised $PGDATA (user $user, database $database)"
fi
exec "$@"
