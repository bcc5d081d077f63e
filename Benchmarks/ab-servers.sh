#!/usr/bin/env bash
# Two builds of the server side by side on one seeded database, wrk runs alternating
# between them, so both see the same machine (whose speed drifts by tens of percent
# between minutes on the benchmark VM).
#
#   Benchmarks/ab-servers.sh <binary A> <binary B> <rounds> <seconds> <endpoint:connections>...
#
# e.g. Benchmarks/ab-servers.sh /tmp/old /tmp/new 4 5 health:64 timeline:16 mark_read:16
# Endpoints are wrk.lua's (post_entry, timeline, mark_read, list_diaries, join) and health.
# Prints, per round and endpoint, each server's req/s, p50/p99 ms and CPU per request
# (srv_us), then the median of B/A per endpoint. DELAY_MS in the environment paces each
# connection, as wrk.lua reads it. A_ENV and B_ENV hold settings for one side only, so
# one binary can be compared with itself: B_ENV=DB_SHARED_READS=1. A_TREE (a checkout of
# A's commit) gives side A a database of its own, migrated and seeded by that tree's
# scripts, for a change of schema: both sides then run on their own schema. B_CITUS=1 gives
# side B the same data set on the Citus cluster of scripts/citus.sh (a coordinator and two
# workers; Citus must be installed, which CI has not), laid out by `migrate --citus`, served
# with DB_CITUS=1; AB_CITUS=1 puts both sides there, one database, for two builds on the cluster.
# Results go to Benchmarks/results/.
# Needs the project's Postgres and its environment (eval "$(scripts/postgres.sh env)").
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 5 ] || { sed -n 2,15p "$0" >&2; exit 2; }
binary_a=$1 binary_b=$2 rounds=$3 seconds=$4
shift 4
db=diary_bench_ab
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
source Benchmarks/endpoints/server.sh
ensure_wrk

seed_with_users "$db" "$work"
declare -A port pid database
database[a]=$db database[b]=$db
if [ -n "${A_TREE:-}" ]; then
    database[a]=${db}_a
    (cd "$A_TREE" && Benchmarks/endpoints/seed-database.sh "${database[a]}")
fi
single_env="PGHOST=$PGHOST PGPORT=$PGPORT"
# Whether side $1 serves from the Citus cluster.
on_citus() { [ "${AB_CITUS:-0}" = 1 ] || { [ "$1" = b ] && [ "${B_CITUS:-0}" = 1 ]; }; }
if on_citus a || on_citus b; then seed_on_citus "$db" "$binary_b"; fi
for side in a b; do
    binary=$binary_a; [ "$side" = b ] && binary=$binary_b
    port[$side]=$(free_port)
    settings=A_ENV; [ "$side" = b ] && settings=B_ENV
    if on_citus "$side"; then eval "$citus_env"; export DB_CITUS=1; fi
    for setting in ${!settings:-}; do export "${setting?}"; done
    start_server "$binary" "${database[$side]}" "$work" "${port[$side]}" "$work/server-$side.log"
    for setting in ${!settings:-}; do unset "${setting%%=*}"; done
    if on_citus "$side"; then unset DB_CITUS; eval "export $single_env"; fi
    pid[$side]=$server_started
    pids+=("$server_started")
done
# req/s p50 p99 srv_us
run() {
    local side=$1 endpoint=${2%%:*} conns=${2##*:} before after result
    before=$(cpu_ticks "${pid[$side]}")
    result=$(ENDPOINT=$endpoint USERS="$work/users.tsv" wrk -t 2 -c "$conns" -d "${seconds}s" -s Benchmarks/endpoints/wrk.lua "http://127.0.0.1:${port[$side]}" | awk '/^RESULT/')
    after=$(cpu_ticks "${pid[$side]}")
    awk -v r="$result" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
        split(r, f, " "); if (f[5] + f[6] > 0) { print "errors: " r > "/dev/stderr"; exit 1 }
        printf "%d %.2f %.2f %d\n", f[2], f[3], f[4], ticks * 1000000 / hz / f[7] }'
}

out="Benchmarks/results/ab-servers-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u); $(nproc) cores; ${seconds}s per run, $rounds rounds, A and B alternating (A first in odd rounds)"
    echo "# A: $binary_a ${A_ENV:-}${A_TREE:+ on its own database, from $A_TREE}"
    echo "# B: $binary_b ${B_ENV:-}${B_CITUS:+ on a Citus coordinator and two workers (DB_CITUS=1)}"
    if [ "${AB_CITUS:-0}" = 1 ]; then echo "# A and B both on one Citus coordinator and two workers (DB_CITUS=1), one database"; fi
    printf '%-5s %-16s %9s %7s %7s %6s %9s %7s %7s %6s %7s\n' round endpoint a_rps a_p50 a_p99 a_us b_rps b_p50 b_p99 b_us b/a
    for round in $(seq 1 "$rounds"); do
        for target in "$@"; do
            if [ $((round % 2)) -eq 1 ]; then a=$(run a "$target"); b=$(run b "$target"); else b=$(run b "$target"); a=$(run a "$target"); fi
            read -r ar ap50 ap99 aus <<< "$a"
            read -r br bp50 bp99 bus <<< "$b"
            printf '%-5s %-16s %9s %7s %7s %6s %9s %7s %7s %6s %7s\n' "$round" "$target" "$ar" "$ap50" "$ap99" "$aus" "$br" "$bp50" "$bp99" "$bus" \
                "$(awk -v a="$ar" -v b="$br" 'BEGIN {printf "%.3f", b / a}')"
        done
    done | tee "$work/rows"
    echo "# median B/A req/s and median CPU per request (A -> B), per endpoint:"
    median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
    for target in "$@"; do
        printf '%-16s B/A %s   srv_us %s -> %s\n' "$target" "$(awk -v t="$target" '$2 == t {print $11}' "$work/rows" | median)" \
            "$(awk -v t="$target" '$2 == t {print $6}' "$work/rows" | median)" "$(awk -v t="$target" '$2 == t {print $10}' "$work/rows" | median)"
    done
} | tee "$out"
echo "written to $out" >&2
