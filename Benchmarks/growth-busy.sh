#!/usr/bin/env bash
# Does an everyday read cost the same for a long diary in a busy database? (issue 62)
#
#   Benchmarks/growth-busy.sh            (make bench-growth MODE=busy)
#
# Environment:
#   DIARY_SERVER_BIN  the server binary to measure (default: this checkout's release build)
#   OTHERS            couple diaries made before the statistics are taken (default 400)
#   GROW              entries the long diary grows to (default 12000)
#   REQUESTS          timed requests per endpoint and size (default 300)
#
# A fresh database (diary_bench_growth_busy) and the server with development sign-in; then
# Benchmarks/growth/busy.py, through the API alone: many small couple diaries, ANALYZE, one
# couple diary grown to GROW entries beside one of 20, and the home list, the diary and the
# timeline's first page timed at both sizes. The generic plan a prepared statement switches to
# after five executions estimates `diary_id = $n` as the table's rows over its diaries, so
# with many small diaries every diary looks small to it: a database holding only the measured
# diaries never shows what this one does. Results go to Benchmarks/results/growth-busy-<UTC time>.txt.
# Needs the project's Postgres and its environment (`make db`, `eval "$(scripts/postgres.sh env)"`).
set -euo pipefail
cd "$(dirname "$0")/.."
db=diary_bench_growth_busy
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
source Benchmarks/endpoints/server.sh

bin=$(release_server)
[ -x "$bin" ] || { echo "no server binary at $bin" >&2; exit 1; }

psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
scripts/schema.sh apply -U diary_owner -d "$db" 2>/dev/null
head -c 32 /dev/urandom > "$work/jwt.key"
port=$(free_port)
DIARY_DEV_AUTH=1 start_server "$bin" "$db" "$work" "$port" "$work/server.log"
server_pid=$server_started
curl -fs "http://127.0.0.1:$port/health" >/dev/null || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

commit=$(git rev-parse --short HEAD)
[ -n "$(git status --porcelain --untracked-files=no)" ] && commit="$commit + uncommitted changes"
out="Benchmarks/results/growth-busy-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u); $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); server $bin ($commit)"
    echo "# Benchmarks/growth-busy.sh: OTHERS=${OTHERS:-400} GROW=${GROW:-12000} REQUESTS=${REQUESTS:-300}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
python3 Benchmarks/growth/busy.py "http://127.0.0.1:$port" "$db" "$out" \
    --others "${OTHERS:-400}" --grow "${GROW:-12000}" --requests "${REQUESTS:-300}"
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
echo "results: $out" >&2
