#!/usr/bin/env bash
# An endpoint's SQL now against the same script at an earlier commit, on one PostgreSQL:
# what a change to a request's statements costs the database, without the server around it.
#
#   Benchmarks/endpoint-scripts-versus.sh REVISION [seconds per run, default 10] [rounds, default 3]
#
# Seeds endpoints/seed.sql (10,000 users, 4,000 diaries, 200,000 entries), then runs each
# endpoints/*.sql that differs from REVISION's, as it is there and as it is here, in turns,
# with pgbench at 16 connections (prepared, as the server sends them), and prints tps, p50 and p99 (ms) of every run. Applies the
# working tree's schema: REVISION's script must still run against it (a previous release's
# statements do, since the schema keeps what the release still serving calls).
# Needs the project's Postgres and its environment (`eval "$(scripts/postgres.sh env)"`).
set -euo pipefail
cd "$(dirname "$0")/.."
revision=${1:?usage: $0 REVISION [seconds] [rounds]}
seconds=${2:-10}
rounds=${3:-3}
db=diary_bench_endpoints
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

Benchmarks/endpoints/seed-database.sh "$db"
changed=()
for script in Benchmarks/endpoints/*.sql; do
    name=$(basename "$script")
    [ "$name" = seed.sql ] && continue
    git show "$revision:$script" > "$work/before-$name" 2>/dev/null || continue
    cmp -s "$work/before-$name" "$script" || changed+=("$name")
done
[ ${#changed[@]} -gt 0 ] || { echo "no endpoint script differs from $revision"; exit 0; }

run() {
    rm -f "$work"/pg.*
    local tps
    tps=$(pgbench -n -M prepared -c 16 -j 2 -T "$seconds" -U diary_app -f "$1" -l --log-prefix="$work/pg" "$db" 2>/dev/null | awk '/^tps/ {print int($3)}')
    cat "$work"/pg.* | awk '{print $3}' | sort -n | awk -v tps="$tps" '
        {v[NR] = $1} END {printf "%6d tps  p50 %6.3f ms  p99 %6.3f ms\n", tps, v[int(NR * 0.5)] / 1000, v[int(NR * 0.99)] / 1000}'
}

echo "endpoint scripts: $(git rev-parse --short "$revision") against the working tree, ${seconds} s a run, 16 connections"
for name in "${changed[@]}"; do
    for round in $(seq "$rounds"); do
        echo "$name round $round  before: $(run "$work/before-$name")"
        echo "$name round $round  now:    $(run "Benchmarks/endpoints/$name")"
    done
done
