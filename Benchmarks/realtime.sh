#!/usr/bin/env bash
# make bench-realtime: the realtime socket under load, on the endpoint benchmark's data set.
#  1. latency: SOCKETS (1,000) sockets over two release servers on one database, entries
#     inserted at RATE (20/s) for SECONDS (20); p50/p99/max from the return of each
#     COMMIT to its frame at every member's socket (target p99 <= 50 ms); then inserts as
#     fast as 4 connections go, and events delivered a second.
#  2. idle: IDLE (10,000) idle sockets on one server; its RSS (VmRSS) before and after,
#     per socket (target <= 20 KB).
# CITUS=1 runs the latency part on the Citus cluster of scripts/citus.sh (Citus installed,
# which CI has not): the same data set laid out by `migrate --citus`, servers with DB_CITUS=1.
# Results go to Benchmarks/results/realtime-<time>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/endpoints/server.sh
SOCKETS=${SOCKETS:-1000} RATE=${RATE:-20} SECONDS_EACH=${SECONDS_EACH:-20} IDLE=${IDLE:-10000}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
swift build -c release --product diary-server >&2
swift build -c release --product realtime-benchmark >&2
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
db=bench_realtime
seed_with_users "$db" "$work"
single_env="PGHOST=$PGHOST PGPORT=$PGPORT"
if [ "${CITUS:-0}" = 1 ]; then
    seed_on_citus "$db" "$bin/diary-server"
    eval "$citus_env"; export DB_CITUS=1
fi
owner="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST"
out="Benchmarks/results/realtime-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# make bench-realtime, $(date -u +%FT%TZ), $(nproc) cores, SOCKETS=$SOCKETS RATE=$RATE SECONDS_EACH=$SECONDS_EACH IDLE=$IDLE${DB_CITUS:+, on a Citus coordinator and two workers (DB_CITUS=1)}"
    p1=$(free_port); p2=$(free_port)
    start_server "$bin/diary-server" "$db" "$work" "$p1" "$work/s1.log"; s1=$server_started
    start_server "$bin/diary-server" "$db" "$work" "$p2" "$work/s2.log"; s2=$server_started
    "$bin/realtime-benchmark" latency "$p1,$p2" "$work/users.tsv" "$owner" "$SOCKETS" "$RATE" "$SECONDS_EACH"
    kill "$s1" "$s2"; wait "$s1" "$s2" 2>/dev/null || true
    if [ "${CITUS:-0}" = 1 ]; then unset DB_CITUS; eval "export $single_env"; fi
    p3=$(free_port)
    start_server "$bin/diary-server" "$db" "$work" "$p3" "$work/s3.log"; s3=$server_started
    "$bin/realtime-benchmark" idle "$p3" "$work/users.tsv" "$IDLE" "$s3"
    kill "$s3"; wait "$s3" 2>/dev/null || true
} | tee "$out"
echo "wrote $out" >&2
