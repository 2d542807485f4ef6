#!/bin/sh
# First-boot script for a dlock PostgreSQL instance (docker-entrypoint-initdb.d
# in compose, the same file in the k8s `local` overlay). Creates one owner role
# per database and, optionally, a read-only role for the reconciler.
#
#   DLOCK_DATABASES   space-separated db:owner pairs, e.g. "paydb:pay_app proxydb:proxy_app"
#   DLOCK_APP_PASSWORD   password of every owner role (local use only)
#   DLOCK_READONLY_ROLE  optional read-only role (reconciler), same password
#
# Each database is closed to PUBLIC, so an owner can connect only to its own
# database even on a shared instance (payment-resource never reaches proxydb).
set -eu
: "${DLOCK_DATABASES:?}"
: "${DLOCK_APP_PASSWORD:?}"
ro="${DLOCK_READONLY_ROLE:-}"

psql_admin() {
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "${1:-postgres}"
}

if [ -n "$ro" ]; then
  psql_admin <<SQL
CREATE ROLE "$ro" LOGIN PASSWORD '$DLOCK_APP_PASSWORD';
SQL
fi

for pair in $DLOCK_DATABASES; do
  db=${pair%%:*}
  owner=${pair#*:}
  psql_admin <<SQL
CREATE ROLE "$owner" LOGIN PASSWORD '$DLOCK_APP_PASSWORD';
CREATE DATABASE "$db" OWNER "$owner";
REVOKE ALL ON DATABASE "$db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE "$db" TO "$owner";
SQL
  if [ -n "$ro" ]; then
    # Tables are created later by the owner's migrations: default privileges
    # make every one of them readable, and only readable, by the reconciler.
    psql_admin "$db" <<SQL
GRANT CONNECT ON DATABASE "$db" TO "$ro";
GRANT USAGE ON SCHEMA public TO "$ro";
ALTER DEFAULT PRIVILEGES FOR ROLE "$owner" IN SCHEMA public GRANT SELECT ON TABLES TO "$ro";
ALTER DEFAULT PRIVILEGES FOR ROLE "$owner" IN SCHEMA public GRANT SELECT ON SEQUENCES TO "$ro";
SQL
  fi
done
