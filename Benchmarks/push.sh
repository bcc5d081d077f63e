#!/usr/bin/env bash
# make bench-push: push notifications end to end, against the APNs stand-in
# (Tests/APNSTestServer) answering at once, on the endpoint benchmark's data set.
#  1. latency: one release server sending; seeded diary 1's 10 members get a device each;
#     entries inserted at RATE (20/s) for SECONDS_EACH (20) through the owner connection, each
#     in its own transaction; p50/p99/max from the return of each COMMIT to the stand-in's
#     receipt of each of its 9 notifications (target: sent within 1 s).
#  2. throughput: BURST (2,000) entries in BURST_TRANSACTIONS (4) multi-row transactions,
#     × 9 devices; notifications/s from the first COMMIT to the last request received, and
#     every (device, entry) checked to arrive once.
#  3. POST entry's cost: wrk post_entry (Benchmarks/endpoints/wrk.lua, CONNECTIONS 16) on one
#     release server with APNs on, ROUNDS (4) rounds of ROUND_SECONDS (10) per condition,
#     alternating as ab-servers.sh does: (a) no devices registered, so posts queue nothing,
#     against (b) a device for every seeded user, so each post queues and sends one
#     notification per other member (7.4 on average). After a (b) round the outbox is left to
#     drain before the next round. Target: median b/a req/s >= 0.9. Each round also reports
#     the CPU per request of the server, of its database backends and (b) of the stand-in,
#     which shares the cores here as Apple's servers would not.
# Results go to Benchmarks/results/push-<time>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/endpoints/server.sh
RATE=${RATE:-20} SECONDS_EACH=${SECONDS_EACH:-20} BURST=${BURST:-2000} BURST_TRANSACTIONS=${BURST_TRANSACTIONS:-4}
ROUNDS=${ROUNDS:-4} ROUND_SECONDS=${ROUND_SECONDS:-10} CONNECTIONS=${CONNECTIONS:-16}
ensure_wrk
swift build -c release --product diary-server >&2
swift build -c release --product push-benchmark >&2
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
db=bench_push
seed_with_users "$db" "$work"
owner_psql() { psql -X -q -At -v ON_ERROR_STOP=1 -U diary_owner -d "$db" "$@"; }
out="Benchmarks/results/push-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
    echo "# make bench-push, $(date -u +%FT%TZ), $(nproc) cores, RATE=$RATE SECONDS_EACH=$SECONDS_EACH BURST=$BURST BURST_TRANSACTIONS=$BURST_TRANSACTIONS ROUNDS=$ROUNDS ROUND_SECONDS=$ROUND_SECONDS CONNECTIONS=$CONNECTIONS; APNs stand-in answering at once, in the benchmark's process on the same cores"
    echo "# 1-2: one release server; diary 1's 10 members with a device each, entries inserted as the owner: COMMIT → request at the stand-in, and a burst's notifications/s"
    p1=$(free_port)
    DATABASE_URL="postgres://diary_app@localhost:$PGPORT/$db?host=$PGHOST" DIARY_JWT_KEY_FILE="$work/jwt.key" DIARY_DATA_DIR="$work" \
        PORT=$p1 LOG_LEVEL=warning "$bin/push-benchmark" e2e "$work" \
        "postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST" "$RATE" "$SECONDS_EACH" "$BURST" "$BURST_TRANSACTIONS" \
        "$bin/diary-server" serve || echo "e2e: failed (exit $?); server log: $(tail -3 "$work/push-server.log" 2>/dev/null | tr '\n' ' ')"

    echo "# 3: POST entry (wrk post_entry, $CONNECTIONS connections, ${ROUND_SECONDS}s a round) on one release server with APNs on: (a) no devices vs (b) one device per seeded user"
    mkdir -p "$work/standin"
    "$bin/push-benchmark" standin "$work/standin" & standin=$!
    for _ in $(seq 1 100); do [ -s "$work/standin/apns.env" ] && break; sleep 0.1; done
    p2=$(free_port)
    . "$work/standin/apns.env"
    start_server "$bin/diary-server" "$db" "$work" "$p2" "$work/s2.log"; s2=$server_started
    curl -fs "http://127.0.0.1:$p2/health" >/dev/null || echo "3: the server did not start: $(tail -3 "$work/s2.log" | tr '\n' ' ')"
    # Condition (b)'s devices: 10,000 of them, inserted by the owner.
    devices_on() {
        owner_psql -c "insert into devices (token, user_id, environment)
            select md5('device ' || n) || md5('device 2 ' || n), md5(n::text)::uuid, 'production' from generate_series(1, 10000) n
            on conflict do nothing"
    }
    devices_off() { owner_psql -c "delete from devices"; }
    sent() { awk '{print $1}' "$work/standin/standin.count"; }
    # The backends serving the server (its pool, its push listener): their CPU is the database's share.
    backends() { psql -X -At -U postgres -d postgres -c "select pid from pg_stat_activity where datname = '$db' and usename = 'diary_app'" | tr '\n' ' '; }
    # req/s p50 p99 srv_us pg_us standin_us notifications/s drain_s
    round() {
        local condition=$1 result before after sbefore safter pbefore pafter pids nbefore nafter drain=0
        if [ "$condition" = b ]; then devices_on; else devices_off; fi
        sleep 1
        pids=$(backends)
        nbefore=$(sent); before=$(cpu_ticks "$s2"); sbefore=$(cpu_ticks "$standin"); pbefore=$(cpu_ticks $pids)
        result=$(ENDPOINT=post_entry USERS="$work/users.tsv" wrk -t 2 -c "$CONNECTIONS" -d "${ROUND_SECONDS}s" -s Benchmarks/endpoints/wrk.lua "http://127.0.0.1:$p2" | awk '/^RESULT/')
        after=$(cpu_ticks "$s2"); safter=$(cpu_ticks "$standin"); pafter=$(cpu_ticks $pids); nafter=$(sent)
        if [ "$condition" = b ]; then
            local start=$SECONDS
            while [ "$(owner_psql -c "select count(*) from push_outbox where dead_at is null")" != 0 ] && [ $((SECONDS - start)) -lt 120 ]; do sleep 0.5; done
            drain=$((SECONDS - start))
        fi
        awk -v r="$result" -v ticks=$((after - before)) -v sticks=$((safter - sbefore)) -v pticks=$((pafter - pbefore)) -v hz="$(getconf CLK_TCK)" \
            -v sent=$((nafter - nbefore)) -v s="$ROUND_SECONDS" -v drain="$drain" 'BEGIN {
            split(r, f, " "); if (f[5] + f[6] > 0) { print "errors: " r > "/dev/stderr" }
            printf "%d %.2f %.2f %d %d %d %d %d\n", f[2], f[3], f[4], ticks * 1000000 / hz / f[7], pticks * 1000000 / hz / f[7],
                sticks * 1000000 / hz / f[7], sent / s, drain }'
    }
    printf '%-5s %7s %7s %7s %6s %6s %7s %7s %7s %6s %6s %6s %8s %5s %6s\n' round a_rps a_p50 a_p99 a_us a_pg b_rps b_p50 b_p99 b_us b_pg sb_us b_sent/s drain b/a
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then a=$(round a); b=$(round b); else b=$(round b); a=$(round a); fi
        read -r ar ap50 ap99 aus apg _ _ _ <<< "$a"
        read -r br bp50 bp99 bus bpg sbus bsent drain <<< "$b"
        printf '%-5s %7s %7s %7s %6s %6s %7s %7s %7s %6s %6s %6s %8s %5s %6s\n' "$r" "$ar" "$ap50" "$ap99" "$aus" "$apg" "$br" "$bp50" "$bp99" "$bus" "$bpg" "$sbus" "$bsent" "$drain" \
            "$(awk -v a="$ar" -v b="$br" 'BEGIN {printf "%.3f", b / a}')"
    done | tee "$work/rows"
    median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
    echo "# columns: req/s, p50/p99 ms, CPU µs per request of the server (a_us, b_us) and of its database backends (a_pg, b_pg),"
    echo "#   the stand-in's CPU µs per request in (b) (sb_us),"
    echo "#   notifications received a second during (b), seconds for the outbox to drain after (b)"
    echo "post_entry: median b/a req/s $(awk '{print $15}' "$work/rows" | median) (target >= 0.9); CPU per request (medians, a -> b): server $(awk '{print $5}' "$work/rows" | median) -> $(awk '{print $10}' "$work/rows" | median) µs, its backends $(awk '{print $6}' "$work/rows" | median) -> $(awk '{print $11}' "$work/rows" | median) µs, stand-in $(awk '{print $12}' "$work/rows" | median) µs; $(awk '{print $13 / $7}' "$work/rows" | median) notifications sent per post in (b)"
    echo "stand-in: $(cat "$work/standin/standin.count" | awk '{print $1 " requests accepted, " $2 " violations"}')"
    devices_off
    kill "$s2" "$standin"; wait "$s2" "$standin" 2>/dev/null || true
} | tee "$out"
echo "wrote $out" >&2
