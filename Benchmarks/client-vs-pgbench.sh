#!/usr/bin/env bash
# The Swift libpq client against pgbench, on the same SQL at the same concurrency.
#   Benchmarks/client-vs-pgbench.sh [seconds per run, default 10] [concurrency list, default "8 32"]
# Needs the project's Postgres (make db) and its environment (make bench does both).
# Writes Benchmarks/results/client-vs-pgbench-<date>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
levels=${2:-8 32}
db=diary_bench
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres)
bench_url="postgres://postgres@localhost:$PGPORT/$db?host=$PGHOST"

"${admin[@]}" -c "drop database if exists $db with (force)" -c "create database $db"
swift build -c release --product diary-server >&2
swift build -c release --product client-benchmark >&2
bin=$(swift build -c release --show-bin-path)
# MIGRATION_DATABASE_URL, when set (scripts/postgres.sh env sets it), wins over DATABASE_URL for migrate.
MIGRATION_DATABASE_URL="$bench_url" DATABASE_URL="$bench_url" "$bin/diary-server" migrate >&2
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d "$db" -f Benchmarks/seed.sql

out="Benchmarks/results/client-vs-pgbench-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u) $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); ${seconds}s per run"
    # own: each statement on a connection of its own, as each pgbench client has one
    # (PostgresPool.Placement.ownConnection, the default); shared: queued on the pool's few
    # shared connections (.sharedConnection). Both run the tasks on the pool's I/O threads
    # (PostgresPool.executor), as pgbench's threads own their connections; global: own, with
    # the tasks on Swift's global executor instead.
    # The machine slows down over sustained runs (the first run after a pause is often 10%
    # faster), so pgbench runs before and after the three client runs, and the client is
    # compared with the mean of the two.
    printf '%-14s %5s %10s %10s %10s %12s %12s %7s %7s\n' workload conns own_tps shared_tps global_tps pgbench_before pgbench_after own shared
    for workload in select_user mark_as_read; do
        for n in $levels; do
            pgbench_tps() {
                pgbench -n -M prepared -c "$n" -j 2 -T "$seconds" -U postgres -f "Benchmarks/pgbench/$workload.sql" "$db" 2>/dev/null \
                    | awk '/^tps/ {print int($3); exit}'
            }
            before=$(pgbench_tps)
            own=$(DATABASE_URL="$bench_url" "$bin/client-benchmark" "$workload" "$n" "$seconds" | awk '{print $4}')
            shared=$(CLIENT_PLACEMENT=shared DATABASE_URL="$bench_url" "$bin/client-benchmark" "$workload" "$n" "$seconds" | awk '{print $4}')
            global=$(CLIENT_EXECUTOR=global DATABASE_URL="$bench_url" "$bin/client-benchmark" "$workload" "$n" "$seconds" | awk '{print $4}')
            after=$(pgbench_tps)
            printf '%-14s %5s %10s %10s %10s %12s %12s %6.1f%% %6.1f%%\n' "$workload" "$n" "$own" "$shared" "$global" "$before" "$after" \
                "$(awk -v s="$own" -v a="$before" -v b="$after" 'BEGIN {print 200 * s / (a + b)}')" \
                "$(awk -v s="$shared" -v a="$before" -v b="$after" 'BEGIN {print 200 * s / (a + b)}')"
        done
    done
} | tee "$out"
