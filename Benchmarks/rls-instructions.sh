#!/usr/bin/env bash
# The cost of row-level security counted in instructions rather than timed: the same
# requests as Benchmarks/rls-overhead.sh, executed by one PostgreSQL backend under
# callgrind, on a seeded database with RLS on and on a copy with RLS off.
#
# Timed runs on this machine drift by more than the effect (see rls-overhead.sh); an
# instruction count does not move between runs, so it shows what a policy change costs.
# It leaves out the kernel, the network and pgbench, which RLS does not touch, so the
# overhead it prints is larger than the throughput overhead.
#   Benchmarks/rls-instructions.sh [endpoint script names, default "timeline post_entry"]
# Runs its own cluster in .data/postgres-callgrind, because `postgres --single` needs the
# data folder to itself; the project's cluster keeps running.
set -euo pipefail
cd "$(dirname "$0")/.."
endpoints=${1:-timeline post_entry}
few=20 many=220
command -v valgrind >/dev/null || { apt-get install -y -qq valgrind >/dev/null 2>&1 || sudo apt-get install -y -qq valgrind >/dev/null; }

export DIARY_PG_CLUSTER="$PWD/.data/postgres-callgrind"
unset PGPORT PGHOST DATABASE_URL MIGRATION_DATABASE_URL TEST_DATABASE_URL
scripts/postgres.sh start
eval "$(scripts/postgres.sh env)"
Benchmarks/endpoints/seed-database.sh diary_rls_on
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists diary_rls_off" \
    -c "create database diary_rls_off owner diary_owner template diary_rls_on"
Benchmarks/endpoints/set-rls.sh diary_rls_off disable
scripts/postgres.sh stop

work=$(mktemp -d)
chmod 777 "$work"
trap 'rm -rf "$work"' EXIT

# instructions <database> <session file>: the backend's instructions, less those spent
# printing rows (single-user mode prints every row; a real backend sends them instead).
instructions() {
    local out="$work/callgrind.out"
    local as_owner=()
    [ "$(id -u)" -eq 0 ] && as_owner=(runuser -u "$DIARY_PG_USER" --)
    (cd "$work" && "${as_owner[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$DIARY_PG_BIN/postgres" --single -D "$DIARY_PG_DATA" "$1" < "$2" > "$work/log" 2>&1)
    if grep -q ERROR "$work/log"; then grep -m3 ERROR "$work/log" >&2; exit 1; fi
    local total printing
    total=$(awk '/Collected :/ {print $4}' "$work/log")
    printing=$(callgrind_annotate --inclusive=yes "$out" | awk '/:debugtup / {gsub(",", "", $1); print $1; exit}')
    echo $((total - ${printing:-0}))
}

out="Benchmarks/results/rls-instructions-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u); PostgreSQL $("$DIARY_PG_BIN/postgres" --version | awk '{print $3}'); instructions per request of one backend (callgrind), the difference of $many and $few transactions of each script"
    printf '%-12s %14s %14s %9s\n' request rls_on rls_off overhead
    for endpoint in $endpoints; do
        # Seeded apart, so that the entries one session posts are new to the other.
        for n in $few $many; do
            python3 Benchmarks/endpoints/single-user-session.py "Benchmarks/endpoints/$endpoint.sql" "$n" "$n" > "$work/session-$n.sql"
        done
        chmod 644 "$work"/session-*.sql
        on=$(( ($(instructions diary_rls_on "$work/session-$many.sql") - $(instructions diary_rls_on "$work/session-$few.sql")) / (many - few) ))
        off=$(( ($(instructions diary_rls_off "$work/session-$many.sql") - $(instructions diary_rls_off "$work/session-$few.sql")) / (many - few) ))
        printf '%-12s %14s %14s %8s%%\n' "$endpoint" "$on" "$off" "$(awk -v on="$on" -v off="$off" 'BEGIN {printf "%.1f", 100 * (on - off) / off}')"
    done
    echo "overhead: (on - off) / off, of the backend's instructions only"
} | tee "$out"
