#!/usr/bin/env bash
# Does an everyday request cost the same whatever the length of a diary's history? (issue 19)
#
#   Benchmarks/growth.sh [seconds per run, default 5]
#
# Environment:
#   DIARY_SERVER_BIN  the server binary to measure (default: this checkout's release build,
#                     built here with `swift build -c release --product diary-server`)
#   MIGRATIONS_DIR    the migrations that build the schema, with sql/definitions beside them (default sql/migrations)
#   ROUNDS            rounds per endpoint (default 2)
#
# Seeds one database (diary_bench_growth: each file of MIGRATIONS_DIR in order as diary_owner,
# each in one transaction as the server's Migrator runs it, then growth/seed.sql) with three
# family diaries of 100, 10,000 and 100,000 entries, each with a measuring user (the owner,
# ~65% of the entries unread: the partner wrote 9 in 10), and eight joiners per diary; then
# VACUUM ANALYZE. A transaction left open elsewhere in the cluster makes the seeding slow (see
# growth/seed.sql): the script warns, in the header too. Starts the release server as diary_app
# (DB_POOL_SIZE 8) and, per endpoint, runs wrk (growth/wrk.lua, 8 connections) against each
# size in turn: GET /v1/diaries (home list), the diary, its members, the timeline's first page
# and a page 30 entries from the oldest, an entry, its reads, POST read, PATCH entry, and two
# pairs each connection alternates (wrk's response()): POST entry then DELETE it, and join by
# invite code then leave (DELETE members/{own id}). Pairs are counted as pairs: their req/s is
# pairs/s and db_us is per pair; their p99 is over both requests. The pairs need one connection
# per wrk thread (-t 8), the rest run with -t 2: eight wrk threads on two cores put scheduling
# delays into wrk's own timings (GET entry at 100 entries: p99 ~100 ms with -t 8, 5-10 ms
# with -t 2, at the same req/s), so the pairs' p99 is inflated alike, at every size.
# Per run: req/s, p50/p99 (ms), CPU per request of the postgres backends serving the server's
# pool (db_us) and of the server (srv_us), from /proc ticks as endpoints.sh computes them, and
# socket errors plus non-2xx answers (a run with any is INVALID and the script exits 1; wrk's
# timeout is 10 s rather than 2, so that a stall of the machine shows in p99, not as an error).
# Noise: the VM's speed drifts between minutes, so the three sizes of an endpoint run back to
# back, and each endpoint runs ROUNDS times, the sizes in reverse order in even rounds
# (100, 10k, 100k, then 100k, 10k, 100). The summary takes each figure's median over the rounds
# and prints req/s(100)/req/s(100k) and db_us(100k)/db_us(100): the target is <= 1.2 for both.
# Between runs: what a pair cut off by the end of a run left (an entry posted, a joiner still
# in) is removed through the API, and the requests wrk left in flight (a few hundred ms of work
# each at 100,000 entries) are waited for, so the next run does not pay for them. Other load on
# the machine (the same Postgres cluster serves the tests) shows as stalls in p99: the header
# and the last line print the load average. Results go to Benchmarks/results/growth-<UTC time>.txt.
# Needs the project's Postgres and its environment (`make db`, `eval "$(scripts/postgres.sh env)"`).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${ROUNDS:-2}
migrations=${MIGRATIONS_DIR:-sql/migrations}
conns=8
db=diary_bench_growth
started=$SECONDS
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
source Benchmarks/endpoints/server.sh
ensure_wrk

bin=$(release_server)
[ -x "$bin" ] || { echo "no server binary at $bin" >&2; exit 1; }
ls "$migrations"/*.sql >/dev/null || { echo "no migrations in $migrations" >&2; exit 1; }
# Which source the binary and the schema come from, for the header.
describe() {
    local dir=$1 commit
    commit=$(git -C "$dir" rev-parse --short HEAD 2>/dev/null) || { echo "(not in git)"; return; }
    if [ -n "$(git -C "$dir" status --porcelain --untracked-files=no 2>/dev/null)" ]; then echo "$commit + uncommitted changes"; else echo "$commit"; fi
}

# A transaction open meanwhile anywhere in the cluster keeps every row version the seeding
# leaves behind (see growth/seed.sql): the seeding slows down, and the runs read bloated tables.
old_transactions() {
    psql -X -At -U postgres -d postgres -c "select string_agg(format('pid %s in %s, open %s s', pid, datname, extract(epoch from now() - xact_start)::int), '; ')
        from pg_stat_activity where xact_start < now() - interval '30 seconds' and pid <> pg_backend_pid()"
}
held=$(old_transactions)
[ -n "$held" ] && echo "warning: transactions open for more than 30 s hold back cleanup, so seeding will be slow and tables bloated: $held" >&2
echo "seeding $db" >&2
seed_started=$SECONDS
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
SQL_DIR="$migrations/.." scripts/schema.sh apply -U diary_owner -d "$db"
psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f Benchmarks/growth/seed.sql
# A superuser's database-wide VACUUM ANALYZE: statistics, and visibility maps set now rather
# than by an autovacuum in the middle of a run (any table a new migration adds included).
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d "$db" -c "vacuum analyze"
seed_seconds=$((SECONDS - seed_started))

# The deep page: before the 30th oldest entry, as EntryRepository.Cursor spells it.
cursor_text() {
    psql -X -At -v ON_ERROR_STOP=1 -U postgres -d "$db" -c "
        select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') || '|' || id
        from entries where diary_id = md5('g-d-$1')::uuid order by created_at, id offset 29 limit 1"
}
head -c 32 /dev/urandom > "$work/jwt.key"
python3 Benchmarks/growth/data.py "$work/jwt.key" "$work/growth.tsv" "$(cursor_text 1)" "$(cursor_text 2)" "$(cursor_text 3)"
# Field $2 of size $1's line in growth.tsv (see data.py).
field() { awk -F'\t' -v s="$1" -v c="$2" '$1 == s {print $c}' "$work/growth.tsv"; }
item() { field "$1" "$2" | cut -d, -f"$3"; }

port=$(free_port)
start_server "$bin" "$db" "$work" "$port" "$work/server.log"
server_pid=$server_started
url="http://127.0.0.1:$port"
curl -fs "$url/health" >/dev/null || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

pool_backends() { { pgrep -f "postgres: diary_app $db " || true; } | tr '\n' ' '; }
per_unit_us() { awk -v ticks="$1" -v hz="$(getconf CLK_TCK)" -v n="$2" 'BEGIN {printf "%d", (n > 0 ? ticks * 1000000 / hz / n : 0)}'; }
# GET $2 as size $1's measuring user: the body, or a failure naming the status.
get() {
    local body status
    body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $(field "$1" 6)" "$url$2")
    status=${body##*$'\n'}
    [ "${status:0:1}" = 2 ] || { echo "GET $2 (size $1) answered $status: ${body%$'\n'*}" >&2; return 1; }
    printf '%s' "${body%$'\n'*}"
}

# ENDPOINTS (space-separated) runs some of them only, e.g. ENDPOINTS="list post_delete".
read -r -a endpoints <<< "${ENDPOINTS:-list diary members timeline timeline_deep entry reads mark_read patch post_delete join_leave}"
declare -A label=(
    [list]="GET /diaries" [diary]="GET /diaries/{d}" [members]="GET {d}/members" [timeline]="GET {d}/entries"
    [timeline_deep]="GET {d}/entries?before" [entry]="GET {d}/entries/{e}" [reads]="GET {e}/reads"
    [mark_read]="POST {e}/read" [patch]="PATCH {d}/entries/{e}" [post_delete]="post+delete" [join_leave]="join+leave"
)
declare -A entries_of=([1]=100 [2]=10000 [3]=100000)

# Removes what a pair cut off at the end of a run left: entries the POST made, joiners still in.
tidy() {
    local s=$1 endpoint=$2 diary entry i
    diary=$(field "$s" 3)
    if [ "$endpoint" = post_delete ]; then
        for entry in $(psql -X -At -U postgres -d "$db" -c "select id from entries where diary_id = '$diary' and content = 'growth post+delete'"); do
            curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $(field "$s" 6)" "$url/v1/diaries/$diary/entries/$entry"
        done
    elif [ "$endpoint" = join_leave ]; then
        for i in $(seq 1 "$conns"); do
            curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $(item "$s" 11 "$i")" "$url/v1/diaries/$diary/members/$(item "$s" 10 "$i")"
        done
    fi
}

# Waits (5 s at most) for the requests wrk left in flight, which at 100,000 entries can run
# for a few hundred milliseconds more: the next run should not pay for them.
settle() {
    local _
    for _ in $(seq 1 50); do
        [ "$(psql -X -At -U postgres -d "$db" -c "select count(*) from pg_stat_activity where datname = '$db' and usename = 'diary_app' and state <> 'idle'")" = 0 ] && return
        sleep 0.1
    done
}

# One wrk run of endpoint $1 on size $2 in round $3: prints its line and appends it to runs.txt.
run() {
    local endpoint=$1 s=$2 round=$3 per=1 threads=2 backends server_before backends_before server_ticks backend_ticks
    local rps p50 p99 errors non2xx requests kinds units rate db_us srv_us bad mark=""
    case $endpoint in post_delete | join_leave) per=2 threads=$conns ;; esac
    backends=$(pool_backends)
    server_before=$(cpu_ticks "$server_pid") backends_before=$(cpu_ticks $backends)
    read -r rps p50 p99 errors non2xx requests kinds < <(ENDPOINT=$endpoint SIZE=$s THREADS=$threads DATA="$work/growth.tsv" \
        wrk -t "$threads" -c "$conns" -d "${seconds}s" --timeout 10s -s Benchmarks/growth/wrk.lua "$url" | awk '/^RESULT/ {print $2, $3, $4, $5, $6, $7, $8}')
    # The pool opens connections as load needs them: count the ones there afterwards.
    server_ticks=$(( $(cpu_ticks "$server_pid") - server_before )) backend_ticks=$(( $(cpu_ticks $(pool_backends)) - backends_before ))
    units=$(awk -v r="$requests" -v p="$per" 'BEGIN {printf "%d", r / p}')
    rate=$(awk -v r="$rps" -v p="$per" 'BEGIN {printf "%d", r / p}')
    db_us=$(per_unit_us "$backend_ticks" "$units") srv_us=$(per_unit_us "$server_ticks" "$units")
    bad=$((errors + non2xx))
    [ "$bad" -gt 0 ] && mark="  <<< INVALID: $errors socket errors (connect/read/write/timeout $kinds), $non2xx non-2xx answers"
    printf '%5s  %-24s %7s %8s %8s %8s %7s %7s %6s%s\n' "$round" "${label[$endpoint]}" "${entries_of[$s]}" "$rate" "$p50" "$p99" "$db_us" "$srv_us" "$bad" "$mark"
    echo "$endpoint $s $round $rate $p50 $p99 $db_us $srv_us $bad" >> "$work/runs.txt"
    tidy "$s" "$endpoint"
    settle
}

# Every request shape answers 2xx once per size before any run; the facts for the header.
facts=()
for s in 1 2 3; do
    diary=$(field "$s" 3) entry=$(item "$s" 8 1)
    home=$(get "$s" /v1/diaries)
    get "$s" "/v1/diaries/$diary" >/dev/null
    get "$s" "/v1/diaries/$diary/members" >/dev/null
    first=$(get "$s" "/v1/diaries/$diary/entries?limit=20")
    deep=$(get "$s" "/v1/diaries/$diary/entries?limit=20&before=$(field "$s" 7)")
    get "$s" "/v1/diaries/$diary/entries/$entry" >/dev/null
    get "$s" "/v1/diaries/$diary/entries/$entry/reads" >/dev/null
    facts+=("$(printf '%s entries: home list unread %s, %s diary, first page %s entries, deep page %s entries (next cursor: %s)' \
        "${entries_of[$s]}" "$(jq '.diaries[0].unreadCount' <<< "$home")" "$(jq '.diaries | length' <<< "$home")" \
        "$(jq '.entries | length' <<< "$first")" "$(jq '.entries | length' <<< "$deep")" "$(jq 'if .nextCursor then "yes" else "no" end' -r <<< "$deep")")")
done
# Warm-up, not reported: opens the pool's connections and reads each diary's pages into the cache.
for s in 1 2 3; do
    ENDPOINT=list SIZE=$s THREADS=2 DATA="$work/growth.tsv" wrk -t 2 -c "$conns" -d 1s -s Benchmarks/growth/wrk.lua "$url" >/dev/null
done

out="Benchmarks/results/growth-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# $(date -u); $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); ${seconds}s per run, $rounds rounds, sizes back to back per endpoint (reversed in even rounds)"
    echo "# server: $bin (source $(describe "$(dirname "$bin")")), release, DB_POOL_SIZE=8; schema: $migrations ($(describe "$migrations"))"
    echo "# wrk -c $conns: -t 2, but -t $conns for the pairs (one connection per thread); every request as the diary's owner, join+leave as $conns joiners"
    echo "# data: $(psql -X -At -U postgres -d "$db" -c "select format('%s users, %s diaries, %s entries, %s reads', (select count(*) from users), (select count(*) from diaries), (select count(*) from entries), (select count(*) from entry_reads))"); seeded in ${seed_seconds}s"
    for fact in "${facts[@]}"; do echo "#   $fact"; done
    [ -n "$held" ] && echo "# WARNING: when seeding began, transactions open for more than 30 s held back cleanup (tables may be bloated): $held"
    echo "# load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg) (anything else on the machine, other databases of this cluster included, is noise here)"
    echo "# pairs (post+delete, join+leave): req/s is pairs/s, db_us and srv_us per pair, p50/p99 over both requests"
    printf '%5s  %-24s %7s %8s %8s %8s %7s %7s %6s\n' round endpoint entries req/s p50_ms p99_ms db_us srv_us errors
    for endpoint in "${endpoints[@]}"; do
        for round in $(seq 1 "$rounds"); do
            order="1 2 3"; [ $((round % 2)) -eq 0 ] && order="3 2 1"
            for s in $order; do run "$endpoint" "$s" "$round"; done
        done
    done

    echo
    echo "# median over the $rounds rounds; ratio req/s: 100-entry / 100,000-entry; ratio db_us: 100,000 / 100; target <= 1.2"
    awk -v order="${endpoints[*]}" -v names="$(for e in "${endpoints[@]}"; do printf '%s\t' "${label[$e]}"; done)" '
        function median(key,    n, i, j, v, t) {
            n = split(values[key], v, " ")
            for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        { for (c = 4; c <= 8; c++) values[$1 SUBSEP $2 SUBSEP c] = values[$1 SUBSEP $2 SUBSEP c] " " $c; bad[$1] += $9 }
        END {
            split(order, endpoint, " "); split(names, name, "\t")
            printf "%-24s %8s %8s %8s  %7s %7s %7s  %6s %6s %6s  %8s %8s  %s\n", "endpoint", "rps_100", "rps_10k", "rps_100k",
                "p99_100", "p99_10k", "p99_100k", "db_100", "db_10k", "db_100k", "rps_x", "db_x", "verdict"
            for (i = 1; i in endpoint; i++) {
                e = endpoint[i]
                for (s = 1; s <= 3; s++) { rps[s] = median(e SUBSEP s SUBSEP 4); p99[s] = median(e SUBSEP s SUBSEP 6); db[s] = median(e SUBSEP s SUBSEP 7) }
                rx = rps[3] > 0 ? rps[1] / rps[3] : 0; dx = db[1] > 0 ? db[3] / db[1] : 0
                verdict = bad[e] > 0 ? "INVALID (" bad[e] " errors)" : (rx <= 1.2 && dx <= 1.2 ? "ok" : "GROWS")
                printf "%-24s %8d %8d %8d  %7.2f %7.2f %7.2f  %6d %6d %6d  %8.2f %8.2f  %s\n", name[i], rps[1], rps[2], rps[3],
                    p99[1], p99[2], p99[3], db[1], db[2], db[3], rx, dx, verdict
            }
        }' "$work/runs.txt"
    echo "# whole run: $((SECONDS - started))s (seeding ${seed_seconds}s); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
echo "written to $out" >&2
status=0
grep -q "unexpected error" "$work/server.log" && { echo "the server logged unexpected errors:" >&2; grep "unexpected error" "$work/server.log" | head -5 >&2; status=1; }
awk '$9 > 0 {bad = 1} END {exit bad}' "$work/runs.txt" || { echo "INVALID: some runs had errors (marked above)" >&2; status=1; }
exit $status
