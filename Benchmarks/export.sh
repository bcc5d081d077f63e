#!/usr/bin/env bash
# make bench-export: a diary's export (GET /v1/diaries/{id}/export) against pg_dump of the same
# rows, side by side, on one release server. A throwaway database (bench_export), migrated by
# `diary-server migrate`; dev sign-in; the photo store in a temporary folder.
# For each SIZES (1000 10000) entries, without photos and with PHOTOS (400) distinct ~300 KB
# JPEGs (ImageMagick noise, one an entry on the oldest entries):
#   export   seconds for one export through curl to a file (the median of RUNS, 3), the
#            archive's bytes, `unzip -t` on it, and the server's peak VmRSS above idle
#            (sampled every 50 ms during the runs)
#   pg_dump  seconds for `pg_dump -Fc --data-only` of the diary's tables (entries, entry_reads,
#            entry_photos, diary_members, diaries, users), the median of RUNS; photo files are
#            not in a dump, so the with-photos rows compare the export with the same rows' dump
# Target: export throughput >= 50% of pg_dump's (pg_dump seconds / export seconds >= 0.5)
# without photos, and memory flat in size (peak - idle < 64 MiB in every case).
# Results go to Benchmarks/results/export-<time>.txt. SERVER_BIN runs a diary-server built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/endpoints/server.sh
SIZES=${SIZES:-"1000 10000"} PHOTOS=${PHOTOS:-400} RUNS=${RUNS:-3}

work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
[ -x /usr/bin/convert ] || { echo "bench-export: needs ImageMagick (scripts/test-tools.sh install-bench, which make bench-export runs)" >&2; exit 1; }
server_bin=${SERVER_BIN:-}
if [ -z "$server_bin" ]; then
    swift build -c release --product diary-server >&2
    server_bin="$(swift build -c release --show-bin-path)/diary-server"
fi

echo "making $PHOTOS JPEGs" >&2
mkdir -p "$work/img"
seq 1 "$PHOTOS" | xargs -P "$(nproc)" -I{} convert -seed {} -size 400x300 xc: +noise Random -quality 90 "$work/img/{}.jpg"

db=bench_export
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
owner_url="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST"
DATABASE_URL="$owner_url" MIGRATION_DATABASE_URL="$owner_url" LOG_LEVEL=warning "$server_bin" migrate >&2
super_psql() { psql -X -q -At -v ON_ERROR_STOP=1 -U postgres -d "$db" "$@"; }

head -c 32 /dev/urandom > "$work/jwt.key"
export DIARY_DEV_AUTH=1 PHOTO_STORE_DIR="$work/photos" EXPORTS_PER_DAY=1000 FREE_PLAN_DIARIES=100
sp=$(free_port)
start_server "$server_bin" "$db" "$work" "$sp" "$work/server.log"; server=$server_started
base="http://127.0.0.1:$sp"
token=$(curl -fsS -X POST -H 'Content-Type: application/json' -d '{"name":"bench"}' "$base/v1/auth/dev" | jq -r .accessToken)
user=$(curl -fsS -H "Authorization: Bearer $token" "$base/v1/me" | jq -r .id)
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

out="Benchmarks/results/export-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# make bench-export, $(date -u +%FT%TZ), $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# SIZES='$SIZES' PHOTOS=$PHOTOS RUNS=$RUNS; $(pg_dump --version); server git $(git rev-parse --short HEAD), release, LOG_LEVEL=warning"
    printf "%-8s %-7s %10s %12s %10s %10s %8s %12s\n" entries photos export_s archive_B pgdump_s dump_B ratio rss_peak_MiB
} | tee "$out"

for size in $SIZES; do
    for photos in 0 "$PHOTOS"; do
        diary=$(curl -fsS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            -d "{\"name\":\"日記 $size $photos\",\"type\":\"family\"}" "$base/v1/diaries" | jq -r .id)
        super_psql -c "select count(*) from (select post_entry_as('$user', '$diary', gen_random_uuid(), repeat('今日はいい天気でした。', 1 + n % 8) || n,
                   case when n % 3 = 0 then '今日の質問' end, created_at => now() - interval '3 years' + n * interval '1 hour')
            from generate_series(1, $size - $photos) n) posts"
        for i in $(seq 1 "$photos"); do
            # Uploads are capped per user and day (200); the bench is not about that cap, so the
            # count restarts before each batch of 150, the first of every size included.
            [ $(((i - 1) % 150)) = 0 ] && super_psql -c "delete from photo_upload_days"
            id=$(curl -fsS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: image/jpeg' -H 'Expect:' --data-binary "@$work/img/$i.jpg" "$base/v1/photos" | jq -r .id)
            curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
                -d "{\"content\":\"写真 $i\",\"photoIds\":[\"$id\"]}" "$base/v1/diaries/$diary/entries"
        done
        super_psql -c "vacuum analyze"
        idle=$(rss_kib "$server"); peak=$idle
        times=()
        for _ in $(seq 1 "$RUNS"); do
            start=$(date +%s.%N)
            curl -fsS -H "Authorization: Bearer $token" -o "$work/export.zip" "$base/v1/diaries/$diary/export" &
            curl_pid=$!
            while kill -0 "$curl_pid" 2>/dev/null; do r=$(rss_kib "$server"); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.05; done
            wait "$curl_pid"
            times+=("$(echo "$(date +%s.%N) - $start" | bc)")
        done
        unzip -tq "$work/export.zip" >/dev/null || { echo "bench-export: unzip -t failed" >&2; exit 1; }
        export_s=$(printf '%s\n' "${times[@]}" | median)
        dump_times=()
        for _ in $(seq 1 "$RUNS"); do
            start=$(date +%s.%N)
            pg_dump -Fc --data-only -U postgres -t entries -t entry_reads -t entry_photos -t diary_members -t diaries -t users -f "$work/dump" "$db"
            dump_times+=("$(echo "$(date +%s.%N) - $start" | bc)")
        done
        dump_s=$(printf '%s\n' "${dump_times[@]}" | median)
        printf "%-8s %-7s %10.3f %12d %10.3f %10d %8.2f %12.1f\n" "$size" "$photos" "$export_s" "$(stat -c %s "$work/export.zip")" \
            "$dump_s" "$(stat -c %s "$work/dump")" "$(echo "$dump_s / $export_s" | bc -l)" "$(echo "($peak - $idle) / 1024" | bc -l)" | tee -a "$out"
        # The next size starts from an empty database, so each dump holds one diary's rows.
        super_psql -c "select forget_entries('$diary', array(select id from entries where diary_id = '$diary'), false)"
    done
done
echo "# ratio = pg_dump seconds / export seconds (target >= 0.5 without photos); rss_peak = the server's peak VmRSS above idle during the exports" | tee -a "$out"
