#!/usr/bin/env bash
# The server against pgbench running the same SQL, endpoint by endpoint (issue 5).
#
#   Benchmarks/endpoints.sh [seconds per run, default 10]
#
# Seeds 10,000 users, 4,000 diaries, 200,000 entries and reads (endpoints/seed.sql), starts
# the release server as diary_app, then for POST entry, GET timeline, POST read,
# GET /v1/diaries and POST join, at 16 and 64 connections, back to back:
#   pgbench  endpoints/<name>.sql: the server's statements, pipelined in one round trip
#   wrk      endpoints/wrk.lua: the HTTP endpoint, each request as a random user
# and prints req/s, p50/p99 and the HTTP/pgbench ratio; round trips per request (the
# server's db_round_trips); CPU per request of the server (srv_us) and of the backends
# serving its pool (db_us); the server's peak RSS; timeline p99 at half its maximum rate, and
# pgbench's at the same pacing;
# and /health against bare Hummingbird 2 (the target, 90%) and swift-nio's NIOHTTP1Server
# example (for information). Results go to Benchmarks/results/.
# Needs the project's Postgres and its environment (`make bench` does both).
# VIA_PGBOUNCER=1: the server (DB_PREPARED_STATEMENTS=0) and pgbench (-M extended) both go
# through a PgBouncer in transaction mode with as many server connections as the pool.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
db=diary_bench_endpoints
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    # Started inside the `{ … } | tee` group, a subshell whose variables never reach this trap.
    [ -f "$work/yardstick.pid" ] && kill "$(cat "$work/yardstick.pid")" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
source Benchmarks/endpoints/server.sh
ensure_wrk
start_pgbouncer

echo "building release binaries" >&2
swift build -c release --product diary-server >&2
swift build -c release --product bare-hummingbird >&2
swift build -c release --package-path .build/checkouts/swift-nio --scratch-path .build/nio-example --product NIOHTTP1Server >&2
bin="$(swift build -c release --show-bin-path)/diary-server"
bare_bin="$(swift build -c release --show-bin-path)/bare-hummingbird"
nio_bin=".build/nio-example/release/NIOHTTP1Server"

seed_with_users "$db" "$work"
port=$(free_port)
start_server "$bin" "$db" "$work" "$port" "$work/server.log"
server_pid=$server_started
url="http://127.0.0.1:$port"

round_trips() { curl -fs "$url/metrics" | awk '/^db_round_trips / {print int($2)}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }
# CPU time of the server, and of the backends serving its pool (cpu_ticks): what each side
# spends per request tells which one to work on, where throughput alone cannot.
pool_backends() { pgrep -f "postgres: diary_app $db " | tr '\n' ' '; }
per_request_us() { awk -v ticks="$1" -v hz="$(getconf CLK_TCK)" -v n="$2" 'BEGIN {printf "%d", ticks * 1000000 / hz / n}'; }

# pgbench: tps, p50 and p99 from its per-transaction log (third field, microseconds), less
# $3 microseconds per transaction (a script's own \sleep).
run_pgbench() {
    rm -f "$work"/pg.*
    local tps
    # shellcheck disable=SC2046
    tps=$(pgbench -n $(pgbench_target) -c "$2" -j 2 -T "$seconds" -U diary_app -f "$1" \
        -l --log-prefix="$work/pg" "$db" 2>/dev/null | awk '/^tps/ {print int($3)}')
    cat "$work"/pg.* | awk -v offset="${3:-0}" '{print $3 - offset}' | sort -n | awk -v tps="$tps" '
        {v[NR] = $1} END {printf "%d %.3f %.3f\n", tps, v[int(NR * 0.5)] / 1000, v[int(NR * 0.99)] / 1000}'
}

run_wrk() {
    ENDPOINT=$1 USERS="$work/users.tsv" DELAY_MS=${3:-0} wrk -t 2 -c "$2" -d "${seconds}s" -s Benchmarks/endpoints/wrk.lua "${4:-$url}" \
        | awk '/^RESULT/ {print $2, $3, $4, $5, $6, $7}'
}

# /health of the server binary $1 (arguments: host port) at 64 connections, as run_wrk prints it.
yardstick_health() {
    local port pid
    port=$(free_port)
    "$1" 127.0.0.1 "$port" >/dev/null 2>&1 &
    pid=$!
    echo "$pid" > "$work/yardstick.pid"
    for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
    run_wrk health 64 0 "http://127.0.0.1:$port"
    kill "$pid" && rm "$work/yardstick.pid"
}

out="Benchmarks/results/endpoints$([ "${VIA_PGBOUNCER:-0}" = 1 ] && echo -pgbouncer)-$(date -u +%Y%m%dT%H%M%SZ).txt"
peak_rss=0
{
    echo "# $(date -u); $(nproc) cores; PostgreSQL $(psql -X -At -U postgres -d postgres -c 'show server_version'); ${seconds}s per run"
    echo "# data: $(psql -X -At -U postgres -d "$db" -c "select format('%s users, %s diaries, %s entries, %s reads', (select count(*) from users), (select count(*) from diaries), (select count(*) from entries), (select count(*) from entry_reads))")"
    echo "# server: release, DB_POOL_SIZE=8, DB_PREPARED_STATEMENTS=$([ "${VIA_PGBOUNCER:-0}" = 1 ] && echo 0 || echo "${DB_PREPARED_STATEMENTS:-1}"); pgbench $(pgbench_target | sed 's/-h .* -p [0-9]* //') -j 2 with \\startpipeline; wrk -t 2"
    [ "${VIA_PGBOUNCER:-0}" = 1 ] && echo "# through PgBouncer $(pgbouncer --version 2>/dev/null | head -1 | awk '{print $2}'), pool_mode transaction, default_pool_size ${PGBOUNCER_POOL_SIZE:-8}"
    # Targets (issue 19): the HTTP/pgbench ratio at least 75% at 16 connections, 85% at 64.
    printf '%-13s %5s %9s %8s %8s %9s %8s %8s %7s %6s %7s %7s %7s %7s\n' endpoint conns pg_tps pg_p50 pg_p99 http_rps p50_ms p99_ms ratio trips errors srv_us db_us target
    for endpoint in post_entry timeline mark_read list_diaries join; do
        for conns in 16 64; do
            read -r pg_tps pg_p50 pg_p99 < <(run_pgbench "Benchmarks/endpoints/$endpoint.sql" "$conns")
            before=$(round_trips)
            sampler=""
            if [ "$conns" -eq 64 ]; then
                ( while kill -0 "$server_pid" 2>/dev/null; do rss_kb; sleep 0.5; done ) > "$work/rss.$endpoint" &
                sampler=$!
            fi
            backends=$(pool_backends)
            server_before=$(cpu_ticks "$server_pid") backends_before=$(cpu_ticks $backends)
            read -r rps p50 p99 errors non2xx requests < <(run_wrk "$endpoint" "$conns")
            # The pool opens connections as load needs them: count the ones there afterwards.
            server_ticks=$(( $(cpu_ticks "$server_pid") - server_before )) backend_ticks=$(( $(cpu_ticks $(pool_backends)) - backends_before ))
            [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
            after=$(round_trips)
            # /metrics itself costs no round trip; the two scrapes are not counted as requests.
            target=$([ "$conns" -eq 64 ] && echo 85 || echo 75)
            printf '%-13s %5s %9s %8s %8s %9s %8s %8s %6.1f%% %6.2f %7s %7s %7s %7s\n' "$endpoint" "$conns" "$pg_tps" "$pg_p50" "$pg_p99" \
                "$rps" "$p50" "$p99" "$(awk -v a="$rps" -v b="$pg_tps" 'BEGIN {print 100 * a / b}')" \
                "$(awk -v a="$after" -v b="$before" -v r="$requests" 'BEGIN {print (a - b) / r}')" "$((errors + non2xx))" \
                "$(per_request_us "$server_ticks" "$requests")" "$(per_request_us "$backend_ticks" "$requests")" \
                "$(awk -v a="$rps" -v b="$pg_tps" -v t="$target" 'BEGIN {print (100 * a / b >= t) ? "met" : "MISS" t}')"
            [ "$endpoint" = timeline ] && [ "$conns" -eq 64 ] && timeline_max=$rps
        done
    done
    peak_rss=$(cat "$work"/rss.* | sort -n | tail -1)
    echo "server RSS during the 64-connection runs: peak $((peak_rss / 1024)) MB (VmHWM $(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$server_pid/status") MB over the whole run)"

    # Half the maximum timeline rate, paced: 16 connections, each waiting between requests.
    delay=$(awk -v max="$timeline_max" 'BEGIN {d = int(16 * 1000 / (max / 2)); print d < 1 ? 1 : d}')
    read -r rps p50 p99 errors non2xx requests < <(run_wrk timeline 16 "$delay")
    echo "timeline at about half its maximum rate ($timeline_max/2): $rps req/s, p50 $p50 ms, p99 $p99 ms"
    # pgbench paced the same way (each client sleeps as long between transactions), less the sleep:
    # how much of that latency the database alone has at this load.
    { cat Benchmarks/endpoints/timeline.sql; echo "\\sleep $delay ms"; } > "$work/timeline_paced.sql"
    read -r paced_tps paced_p50 paced_p99 < <(run_pgbench "$work/timeline_paced.sql" 16 "$((delay * 1000))")
    echo "pgbench paced alike: $paced_tps tps, p50 $paced_p50 ms, p99 $paced_p99 ms"

    # The target's yardstick: Hummingbird 2 with no middleware (Benchmarks/BareHummingbird), in the same run.
    read -r bare_rps _ bare_p99 _ <<< "$(yardstick_health "$bare_bin")"
    read -r nio_rps _ nio_p99 _ <<< "$(yardstick_health "$nio_bin")"
    read -r our_rps _ our_p99 _ <<< "$(run_wrk health 64)"
    echo "/health at 64 connections: diary-server $our_rps req/s (p99 $our_p99 ms), bare Hummingbird $bare_rps req/s (p99 $bare_p99 ms): $(awk -v a="$our_rps" -v b="$bare_rps" 'BEGIN {printf "%.1f%%", 100 * a / b}') (target 90%)"
    echo "  for information, NIOHTTP1Server $nio_rps req/s (p99 $nio_p99 ms): $(awk -v a="$our_rps" -v b="$nio_rps" 'BEGIN {printf "%.1f%%", 100 * a / b}')"
} | tee "$out"
grep -q "unexpected error" "$work/server.log" && { echo "the server logged unexpected errors:" >&2; grep "unexpected error" "$work/server.log" | head -5 >&2; exit 1; }
echo "written to $out" >&2
