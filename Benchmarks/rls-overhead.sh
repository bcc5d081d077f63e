#!/usr/bin/env bash
# The cost of row-level security on the server's two hottest requests, POST entry and
# GET timeline (issue 4): the SQL the server sends, as in `make bench`
# (Benchmarks/endpoints/{post_entry,timeline}.sql on Benchmarks/endpoints/seed.sql), run
# by pgbench as diary_app with RLS on, then with RLS disabled on every table.
#   Benchmarks/rls-overhead.sh [seconds per run, default 5] [clients, default 8] [rounds, default 5]
# Needs the project's Postgres and its environment (`make bench-rls` does both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
clients=${2:-8}
rounds=${3:-5}
db=diary_bench_rls
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres)
tables="users diaries diary_members entries entry_reads sessions"

echo "seeding $db" >&2
"${admin[@]}" -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
for migration in sql/migrations/*.sql; do
    psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f "$migration" >/dev/null
done
psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f Benchmarks/endpoints/seed.sql

run() {
    pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -U diary_app -f "Benchmarks/endpoints/$1.sql" "$db" 2>/dev/null \
        | awk '/^tps/ {print int($3)}'
}

set_rls() {
    for table in $tables; do "${admin[@]}" -d "$db" -c "alter table $table $1 row level security"; done
}

median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

out="Benchmarks/results/rls-overhead-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u) $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); median of $rounds alternating ${seconds}s runs, $clients clients, pgbench -M prepared as diary_app"
    printf '%-12s %10s %10s %9s   %s\n' request rls_on_tps rls_off_tps overhead "every run (on/off)"
    for script in post_entry timeline; do
        # Alternating rounds and their medians: this machine's noise is larger than the effect.
        on_runs="" off_runs=""
        for _ in $(seq "$rounds"); do
            set_rls enable
            on_runs="$on_runs $(run "$script")"
            set_rls disable
            off_runs="$off_runs $(run "$script")"
        done
        set_rls enable
        on_tps=$(echo $on_runs | median) off_tps=$(echo $off_runs | median)
        printf '%-12s %10s %10s %8.1f%%   %s\n' "$script" "$on_tps" "$off_tps" \
            "$(awk -v on="$on_tps" -v off="$off_tps" 'BEGIN {print 100 * (off - on) / off}')" "${on_runs# } /${off_runs}"
    done
} | tee "$out"
