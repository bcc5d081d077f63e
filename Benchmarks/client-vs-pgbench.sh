#!/usr/bin/env bash
# The Swift libpq client against pgbench, on the same SQL at the same concurrency.
#   Benchmarks/client-vs-pgbench.sh [seconds per run, default 10] [concurrency list, default "8 32"] [rounds, default 3]
# Needs the project's Postgres (make db) and its environment (make bench does both).
# Writes Benchmarks/results/client-vs-pgbench-<date>.txt.
#
# Three drivers per workload and concurrency:
#   pgbench  pgbench -M prepared, one connection per client;
#   own      the client, each statement on a connection of its own, as each pgbench client
#            has one (PostgresPool.Placement.ownConnection, the default);
#   shared   the client, statements queued on the pool's few shared connections
#            (.sharedConnection).
# The last table holds each workload on the placement PostgresPool.Placement advises for it
# (reads shared, writes on their own connections) against the goal of 90% of pgbench.
# The client's tasks prefer the pool's I/O threads (PostgresPool.executor), as pgbench's
# threads own their connections. The machine's speed drifts by 10-20% from one run to the
# next, so each round runs the three in a rotated order, and the table gives medians.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
levels=${2:-8 32}
rounds=${3:-3}
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

# tps of one run: driver workload concurrency
run() {
    case $1 in
        pgbench) pgbench -n -M prepared -c "$3" -j 2 -T "$seconds" -U postgres -f "Benchmarks/pgbench/$2.sql" "$db" 2>/dev/null \
                     | awk '/^tps/ {print int($3); exit}' ;;
        own) DATABASE_URL="$bench_url" "$bin/client-benchmark" "$2" "$3" "$seconds" | awk '{print $4}' ;;
        shared) CLIENT_PLACEMENT=shared DATABASE_URL="$bench_url" "$bin/client-benchmark" "$2" "$3" "$seconds" | awk '{print $4}' ;;
    esac
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }

out="Benchmarks/results/client-vs-pgbench-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u) $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); ${seconds}s per run, $rounds rounds"
    echo "# per round, in its order: tps of each driver"
    drivers=(pgbench own shared)
    declare -A runs
    for workload in select_user mark_as_read; do
        for n in $levels; do
            for round in $(seq 1 "$rounds"); do
                line="$workload c=$n round $round:"
                for offset in 0 1 2; do
                    driver=${drivers[$(( (round - 1 + offset) % 3 ))]}
                    tps=$(run "$driver" "$workload" "$n")
                    runs[$workload,$n,$driver]="${runs[$workload,$n,$driver]:-} $tps"
                    line="$line $driver=$tps"
                done
                echo "# $line"
            done
        done
    done
    printf '%-14s %5s %10s %10s %10s %7s %7s\n' workload conns pgbench own shared own shared
    for workload in select_user mark_as_read; do
        for n in $levels; do
            pg=$(echo "${runs[$workload,$n,pgbench]}" | median)
            own=$(echo "${runs[$workload,$n,own]}" | median)
            shared=$(echo "${runs[$workload,$n,shared]}" | median)
            printf '%-14s %5s %10s %10s %10s %6.1f%% %6.1f%%\n' "$workload" "$n" "$pg" "$own" "$shared" \
                "$(awk -v s="$own" -v p="$pg" 'BEGIN {print 100 * s / p}')" "$(awk -v s="$shared" -v p="$pg" 'BEGIN {print 100 * s / p}')"
        done
    done
    echo
    printf '%-14s %5s %-8s %7s %s\n' workload conns advised ratio "goal 90%"
    for workload in select_user mark_as_read; do
        case $workload in select_user) advised=shared ;; *) advised=own ;; esac
        for n in $levels; do
            ratio=$(awk -v s="$(echo "${runs[$workload,$n,$advised]}" | median)" -v p="$(echo "${runs[$workload,$n,pgbench]}" | median)" 'BEGIN {printf "%.1f", 100 * s / p}')
            printf '%-14s %5s %-8s %6s%% %s\n' "$workload" "$n" "$advised" "$ratio" "$(awk -v r="$ratio" 'BEGIN {print (r >= 90) ? "met" : "missed"}')"
        done
    done
} | tee "$out"
