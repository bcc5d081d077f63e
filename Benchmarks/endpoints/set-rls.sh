#!/usr/bin/env bash
# Turns row-level security on or off on every table the benchmarked requests touch, in
# database $1 ($2: enable or disable). For Benchmarks/rls-overhead.sh and
# Benchmarks/rls-instructions.sh; needs the project's Postgres environment.
set -euo pipefail
for table in users diaries diary_members entries entry_reads sessions; do
    psql -X -q -v ON_ERROR_STOP=1 -U postgres -d "$1" -c "alter table $table $2 row level security"
done
