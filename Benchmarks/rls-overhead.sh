#!/usr/bin/env bash
# The cost of row-level security on the server's two hottest requests, POST entry and
# GET timeline (issue 4): the SQL the server sends, as in `make bench`
# (Benchmarks/endpoints/{post_entry,timeline}.sql on Benchmarks/endpoints/seed.sql), run
# by pgbench as diary_app on two identical databases, one with RLS and one with RLS
# disabled on every table.
#
# The two run at the same time, round after round: this machine's speed drifts by more
# than the effect between one run and the next, and running side by side gives both the
# same conditions. Each gets half the clients, so the load is that of one run. The two
# databases swap roles every round (RLS is disabled on one and enabled on the other), so
# that a difference between the databases themselves (layout, cache) cancels out: an A/A
# run with RLS on in both showed one database faster than the other by several percent.
#   [CALIBRATE=1] Benchmarks/rls-overhead.sh [seconds per round, default 5] [clients, default 8] [rounds, default 6: even, so each database plays each part as often]
# Needs the project's Postgres and its environment (`make bench-rls` does both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
clients=${2:-8}
rounds=${3:-6}
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres)

# CALIBRATE=1 leaves RLS on in both: the "overhead" printed is then the harness's own noise.
off_state=disable
[ "${CALIBRATE:-0}" = 1 ] && off_state=enable
databases=(diary_bench_rls_a diary_bench_rls_b)
# Seeded once, then copied: the two start out identical.
Benchmarks/endpoints/seed-database.sh "${databases[0]}"
"${admin[@]}" -d postgres -c "drop database if exists ${databases[1]} with (force)" \
    -c "create database ${databases[1]} owner diary_owner template ${databases[0]}"

run() {
    pgbench -n -M prepared -c "$((clients / 2))" -j 1 -T "$seconds" -U diary_app -f "Benchmarks/endpoints/$1.sql" "$2" 2>/dev/null \
        | awk '/^tps/ {print int($3)}'
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

out="Benchmarks/results/rls-overhead-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u) $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); $rounds rounds of ${seconds}s, RLS on and off side by side, $((clients / 2)) clients each, pgbench -M prepared as diary_app"
    printf '%-12s %10s %10s %9s   %s\n' request rls_on_tps rls_off_tps overhead "every round (on/off)"
    for script in post_entry timeline; do
        on_runs="" off_runs="" overheads=""
        for round in $(seq "$rounds"); do
            rls_on=${databases[$((round % 2))]} rls_off=${databases[$(((round + 1) % 2))]}
            Benchmarks/endpoints/set-rls.sh "$rls_on" enable
            Benchmarks/endpoints/set-rls.sh "$rls_off" "$off_state"
            run "$script" "$rls_on" > "${TMPDIR:-/tmp}/rls_on.$$" &
            on_pid=$!
            off=$(run "$script" "$rls_off")
            wait "$on_pid"
            on=$(cat "${TMPDIR:-/tmp}/rls_on.$$")
            on_runs="$on_runs $on" off_runs="$off_runs $off"
            overheads="$overheads $(awk -v on="$on" -v off="$off" 'BEGIN {printf "%.1f", 100 * (off - on) / off}')"
        done
        rm -f "${TMPDIR:-/tmp}/rls_on.$$"
        printf '%-12s %10s %10s %8s%%   %s\n' "$script" "$(echo $on_runs | median)" "$(echo $off_runs | median)" \
            "$(echo $overheads | median)" "${on_runs# } /${off_runs}"
    done
    echo "overhead: the median of the rounds' (off - on) / off$([ "$off_state" = enable ] && echo "; CALIBRATE=1: RLS was on in both")"
} | tee "$out"
