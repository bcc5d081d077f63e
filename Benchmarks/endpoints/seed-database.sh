#!/usr/bin/env bash
# Creates database $1 afresh, migrated as an admin with psql would (scripts/schema.sh apply,
# as diary_owner), and seeded with Benchmarks/endpoints/seed.sql.
# Used by Benchmarks/endpoints.sh and Benchmarks/rls-overhead.sh; needs the project's
# Postgres environment and the repository root as the working directory.
set -euo pipefail
db=$1
echo "seeding $db" >&2
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
scripts/schema.sh apply -U diary_owner -d "$db"
psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f Benchmarks/endpoints/seed.sql
