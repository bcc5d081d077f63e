#!/usr/bin/env bash
# The pgTAP suites in Tests/sql, on a database migrated the way an admin with psql
# would do it (scripts/schema.sh apply): sql/migrations, then sql/definitions, as diary_owner.
# Needs the project's Postgres and its environment (`make test` provides both).
set -euo pipefail
cd "$(dirname "$0")/../.."
db="pgtap_$$_$(date +%s)"
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres)
"${admin[@]}" -d postgres -c "create database $db owner diary_owner"
trap '"${admin[@]}" -d postgres -c "drop database if exists $db with (force)" >/dev/null' EXIT
scripts/schema.sh apply -U diary_owner -d "$db"
"${admin[@]}" -d "$db" -c "create schema tap" -c "create extension pgtap schema tap" -c "grant usage on schema tap to diary_app"
failed=0
for suite in Tests/sql/*.sql; do
    output=$(psql -X -U postgres -d "$db" -f "$suite" 2>&1) || failed=1
    echo "$output"
    if grep -qE '^not ok|^# Looks like|ERROR' <<<"$output" || ! grep -q '^ok' <<<"$output"; then
        failed=1
    fi
    echo "$suite: $(grep -c '^ok' <<<"$output") passed, $(grep -c '^not ok' <<<"$output") failed"
done
exit $failed
