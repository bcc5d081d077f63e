#!/usr/bin/env bash
# Run once by the postgres image on an empty volume (docker-entrypoint-initdb.d):
# creates the two roles from sql/roles.sql, gives them the compose passwords, and
# makes diary_owner the owner of the diary database.
set -euo pipefail
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -f /zutto-nikki/roles.sql
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
    -v owner_password="$DIARY_OWNER_PASSWORD" -v app_password="$DIARY_APP_PASSWORD" <<'SQL'
alter role diary_owner password :'owner_password';
alter role diary_app password :'app_password';
alter database diary owner to diary_owner;
SQL
