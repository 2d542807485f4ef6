#!/bin/sh
# First-boot script for a dlock PostgreSQL instance (docker-entrypoint-initdb.d
# in compose, the same file in the k8s `local` overlay). Creates one owner role
# per database and, optionally, the reconciler's read-only role with LOGIN.
#
#   DLOCK_DATABASES          space-separated db:owner pairs, e.g. "paydb:pay_app proxydb:proxy_app"
#   DLOCK_APP_PASSWORD       password of every owner role (local use only)
#   DLOCK_READONLY_ROLE      optional: the reconciler's read-only role (reconciler_ro)
#   DLOCK_READONLY_PASSWORD  its own password (required with DLOCK_READONLY_ROLE)
#
# Each database is closed to PUBLIC, so an owner can connect only to its own
# database even on a shared instance (payment-resource never reaches proxydb).
# The read-only role's grants are not made here: each database's migration
# makes them (migrations/reconciler-reader.ts; docs/operations.md, "The
# reconciler's read-only role"), as its owner, who cannot create the role.
set -eu
: "${DLOCK_DATABASES:?}"
: "${DLOCK_APP_PASSWORD:?}"
ro="${DLOCK_READONLY_ROLE:-}"
if [ -n "$ro" ]; then : "${DLOCK_READONLY_PASSWORD:?with DLOCK_READONLY_ROLE}"; fi

psql_admin() {
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "${1:-postgres}"
}

if [ -n "$ro" ]; then
  psql_admin <<SQL
CREATE ROLE "$ro" LOGIN PASSWORD '$DLOCK_READONLY_PASSWORD';
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
done
