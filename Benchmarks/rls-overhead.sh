#!/usr/bin/env bash
# The cost of row-level security on the server's two hottest requests, POST entry and
# GET timeline: the exact SQL the server sends (Benchmarks/pgbench/{post_entry,timeline}.sql),
# run by pgbench as diary_app with RLS on, then with RLS disabled on every table.
#   Benchmarks/rls-overhead.sh [seconds per run, default 10] [clients, default 8] [rounds, default 3]
# Needs the project's Postgres and its environment (`make bench-rls` does both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
clients=${2:-8}
rounds=${3:-3}
db=diary_bench_rls
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres)
tables="users diaries diary_members entries entry_reads sessions"

"${admin[@]}" -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
for migration in sql/migrations/*.sql; do
    psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f "$migration" >/dev/null
done
"${admin[@]}" -d "$db" -f Benchmarks/seed.sql
"${admin[@]}" -d "$db" -c "insert into sessions (id, user_id) select md5('s' || g)::uuid, md5(g::text)::uuid from generate_series(1, 10000) g; analyze"

run() {
    pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -U diary_app -f "Benchmarks/pgbench/$1.sql" "$db" 2>/dev/null \
        | awk '/^tps/ {tps = int($3)} /latency average/ {lat = $4} END {print tps, lat}'
}

set_rls() {
    for table in $tables; do "${admin[@]}" -d "$db" -c "alter table $table $1 row level security"; done
}

out="Benchmarks/results/rls-overhead-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u) $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); best of $rounds alternating ${seconds}s runs, $clients clients, pgbench -M prepared as diary_app"
    printf '%-12s %10s %10s %10s %10s %9s\n' request rls_on_tps ms rls_off_tps ms overhead
    for script in post_entry timeline; do
        # Alternating rounds, best of each: this machine's noise is larger than the effect.
        on_tps=0 off_tps=0
        for _ in $(seq "$rounds"); do
            set_rls enable
            read -r tps ms < <(run "$script")
            if [ "$tps" -gt "$on_tps" ]; then on_tps=$tps on_ms=$ms; fi
            set_rls disable
            read -r tps ms < <(run "$script")
            if [ "$tps" -gt "$off_tps" ]; then off_tps=$tps off_ms=$ms; fi
        done
        set_rls enable
        printf '%-12s %10s %10s %10s %10s %8.1f%%\n' "$script" "$on_tps" "$on_ms" "$off_tps" "$off_ms" \
            "$(awk -v on="$on_tps" -v off="$off_tps" 'BEGIN {print 100 * (off - on) / off}')"
    done
} | tee "$out"
