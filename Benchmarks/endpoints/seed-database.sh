#!/usr/bin/env bash
# Creates database $1 afresh, migrated as an admin with psql would (diary_owner, each file
# of sql/migrations in order, each in one transaction as the server's Migrator runs it), and seeded with Benchmarks/endpoints/seed.sql.
# Used by Benchmarks/endpoints.sh and Benchmarks/rls-overhead.sh; needs the project's
# Postgres environment and the repository root as the working directory.
set -euo pipefail
db=$1
echo "seeding $db" >&2
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
for migration in sql/migrations/*.sql; do
    psql -X -q -v ON_ERROR_STOP=1 -1 -U diary_owner -d "$db" -f "$migration" >/dev/null
done
psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f Benchmarks/endpoints/seed.sql
