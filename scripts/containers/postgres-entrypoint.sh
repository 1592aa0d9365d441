#!/bin/sh
# The entrypoint of the local PostgreSQL image: what the official image's does, as far as tests
# need it. POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB (as testcontainers'
# PostgreSqlContainer sets them) become a superuser role and its database on the first start.
# The image carries a cluster initialised at build time; an empty PGDATA (a volume) is
# initialised here the same way. Then the command runs as the user postgres.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -e "$PGDATA/.roles-created" ]; then
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    initdb -D "$PGDATA" -U postgres -E UTF8 --locale=C.UTF-8 --auth=trust --no-sync >/dev/null
    cat /usr/local/share/posts/postgresql.conf >>"$PGDATA/postgresql.conf"
    echo "host all all all trust" >>"$PGDATA/pg_hba.conf"
  fi
  user="${POSTGRES_USER:-postgres}"
  database="${POSTGRES_DB:-$user}"
  literal() { printf "%s" "$1" | sed "s/'/''/g"; }
  identifier() { printf "%s" "$1" | sed 's/"/""/g'; }
  {
    [ "$user" = postgres ] || echo "CREATE ROLE \"$(identifier "$user")\" SUPERUSER LOGIN;"
    [ -z "${POSTGRES_PASSWORD:-}" ] || echo "ALTER ROLE \"$(identifier "$user")\" PASSWORD '$(literal "$POSTGRES_PASSWORD")';"
    [ "$database" = postgres ] || echo "CREATE DATABASE \"$(identifier "$database")\" OWNER \"$(identifier "$user")\";"
  } | postgres --single -D "$PGDATA" -c exit_on_error=true postgres >/dev/null
  touch "$PGDATA/.roles-created"
fi
exec "$@"
