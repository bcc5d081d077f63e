#!/usr/bin/env bash
# make bench-photos: photo uploads and downloads on one release server, downloads against
# nginx serving the same files from the same disk. A throwaway database (bench_photos),
# migrated by `diary-server migrate`; dev sign-in; the photo store in a temporary folder.
#  1. uploads: PHOTOS (200) distinct ~2 MiB JPEGs (ImageMagick noise, PHOTO_SIZE 1280x960,
#     quality 92) made once; wrk (Benchmarks/photos/upload.lua) POSTs them in turn for
#     UPLOAD_SECONDS (10) at each of UPLOAD_CONCURRENCY (1 8) connections, spread over USERS
#     (40) dev users, the daily counters reset between runs; uploads/s, MB/s (10^6 bytes) of
#     bodies, p50/p99, the server's CPU per upload. No target.
#  2. downloads, the server's signed URL against nginx (Benchmarks/photos/nginx.conf: sendfile,
#     no access log, root = the store, /<2 hex>/<hash>), wrk -t 2 -c CONNECTIONS (16),
#     Benchmarks/photos/get.lua, DOWNLOAD_SECONDS (3) a run, ROUNDS (4) rounds alternating
#     which goes first:
#       single-cached    one ~2 MiB photo, in the page cache (read, and 2 s of wrk, first)
#       single-uncached  the same, evicted before each run; wrk's first read warms it again,
#                        so this is the cached figure with one disk read in it
#       many-cached      PHOTOS distinct photos in turn, all in the page cache
#       many-uncached    the same, all evicted before each run: the first pass over them
#                        (PHOTOS x 2 MiB) comes from disk, the rest of the run from the cache
#       onepass-cached / onepass-uncached   each of the PHOTOS fetched exactly once by one
#                        curl --parallel (CONNECTIONS at a time): uncached, every byte from
#                        disk; the client here is curl, whose cost is the same for both
#     Eviction: EVICT=fadvise (default; posix_fadvise DONTNEED on the photos' files alone,
#     leaving the binaries', PostgreSQL's and the other processes' pages alone) or
#     EVICT=drop_caches (the whole page cache, falling back to fadvise if refused); either is
#     checked with mincore and the pages left resident are printed. This is a virtual
#     machine: "disk" may well be the host's page cache.
#     Target: server >= 70% of nginx's requests/s in every case (the median over the rounds of
#     each round's server/nginx; also printed: nginx's CPU per request over the server's and
#     its backends', the ratio were both CPU-bound on cores of their own). Then 304s a second: the
#     signed URL with If-None-Match, server alone (no target). With PERF=1 (default when perf
#     works) a 5 s `perf record -g` of the server under single-cached, its top symbols
#     (PERF_DATA=file keeps the recording).
#  3. memory: one 9-10 MiB JPEG (BIG_SIZE 2100x2100, quality 97, resized until it fits);
#     a second server (fresh, warmed by two small GETs) serves SLOW_DOWNLOADS (20) concurrent
#     curl --limit-rate LIMIT_RATE (2M) downloads of it; VmRSS idle, sampled every 100 ms,
#     peak and peak - idle (MiB), every download checked for status 200 and the full byte
#     count. Target: peak - idle < 64 MiB.
#  4. the S3 store (PHOTO_STORE=s3) beside the folder, against moto's S3 server
#     (scripts/moto.sh, started if need be): part 1's uploads a second at UPLOAD_CONCURRENCY
#     on a server whose store is the bucket, and part 3's RSS during SLOW_DOWNLOADS from it
#     (PHOTO_URLS=server, the bytes streamed through the server); then with
#     PHOTO_URLS=presigned (moto's open instance) the same downloads by the entries' presigned
#     URLs, and the bytes the server wrote meanwhile (/proc/PID/io wchar): the target is
#     none of the photo's. moto is a Python process on the same 2 cores: the figures are
#     moto's as much as the server's, and say nothing of AWS's or R2's own speed.
# Needs ImageMagick's convert (fails if missing) and installs wrk and nginx from Debian's
# packages if missing. SERVER_BIN runs a diary-server built elsewhere instead of building
# this tree's (SERVER_NOTE: what it is, for the results; DIARY_MIGRATIONS_DIR, read by
# `diary-server migrate`, to migrate with that build's sql/migrations). Results go to
# Benchmarks/results/photos-<time>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/endpoints/server.sh
PHOTOS=${PHOTOS:-200} PHOTO_SIZE=${PHOTO_SIZE:-1280x960} BIG_SIZE=${BIG_SIZE:-2100x2100} USERS=${USERS:-40}
UPLOAD_CONCURRENCY=${UPLOAD_CONCURRENCY:-"1 8"} UPLOAD_SECONDS=${UPLOAD_SECONDS:-10}
CONNECTIONS=${CONNECTIONS:-16} DOWNLOAD_SECONDS=${DOWNLOAD_SECONDS:-3} ROUNDS=${ROUNDS:-4} EVICT=${EVICT:-fadvise}
SLOW_DOWNLOADS=${SLOW_DOWNLOADS:-20} LIMIT_RATE=${LIMIT_RATE:-2M} PERF=${PERF:-}
ulimit -n 65536 2>/dev/null || true

work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The test images need a real ImageMagick: a convert that writes a JPEG.
if ! { convert -size 8x8 xc: "$work/probe.jpg" && [ "$(head -c 3 "$work/probe.jpg" | od -An -tx1 | tr -d ' \n')" = ffd8ff ]; } >/dev/null 2>&1; then
    echo "bench-photos: needs ImageMagick's convert to make its test JPEGs, and \`convert\` here is missing or cannot write a JPEG (Debian: apt-get install imagemagick)" >&2
    exit 1
fi
ensure_wrk
ensure_nginx() {
    command -v nginx >/dev/null && return 0
    [ -x /usr/sbin/nginx ] && { PATH=$PATH:/usr/sbin; return 0; }
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
    # RUNLEVEL=1: the package's own service is not started; this script runs its own nginx.
    $sudo env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >&2 \
        || $sudo env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >&2
    command -v nginx >/dev/null || PATH=$PATH:/usr/sbin
}
ensure_nginx
if [ -z "$PERF" ]; then PERF=0; perf stat -e task-clock -o /dev/null true >/dev/null 2>&1 && PERF=1; fi

# SERVER_BIN: a release diary-server built elsewhere, instead of this tree's .build.
server_bin=${SERVER_BIN:-}
if [ -z "$server_bin" ]; then
    swift build -c release --product diary-server >&2
    server_bin="$(swift build -c release --show-bin-path)/diary-server"
fi

# The images: distinct seeds, so distinct files; one of 9-10 MiB for part 3.
echo "making $PHOTOS JPEGs of $PHOTO_SIZE" >&2
mkdir -p "$work/img"
seq 1 "$PHOTOS" | xargs -P "$(nproc)" -I{} convert -seed {} -size "$PHOTO_SIZE" xc: +noise Random -quality 92 "$work/img/{}.jpg"
[ "$(sha256sum "$work"/img/*.jpg | awk '{print $1}' | sort -u | wc -l)" = "$PHOTOS" ] || { echo "bench-photos: the JPEGs are not distinct" >&2; exit 1; }
seq 1 "$PHOTOS" | sed "s|.*|$work/img/&.jpg|" > "$work/bodies.txt"
mean_body=$(cat "$work/bodies.txt" | xargs stat -c %s | awk '{s += $1} END {printf "%d", s / NR}')
side=${BIG_SIZE%x*}
for _ in $(seq 1 12); do
    convert -seed 4242 -size "${side}x${side}" xc: +noise Random -quality 97 "$work/big.jpg"
    big_file=$(stat -c %s "$work/big.jpg")
    if [ "$big_file" -gt 10485760 ]; then side=$((side * 98 / 100))
    elif [ "$big_file" -le 9437184 ]; then side=$((side * 102 / 100))
    else break; fi
done
[ "$big_file" -gt 9437184 ] && [ "$big_file" -le 10485760 ] || { echo "bench-photos: no JPEG of 9-10 MiB ($big_file bytes at ${side}px)" >&2; exit 1; }

# The database, afresh, migrated by the server as its owner.
db=bench_photos
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -c "drop database if exists $db with (force)" -c "create database $db owner diary_owner"
DATABASE_URL="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST" MIGRATION_DATABASE_URL="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST" \
    LOG_LEVEL=warning "$server_bin" migrate >&2
super_psql() { psql -X -q -At -v ON_ERROR_STOP=1 -U postgres -d "$db" "$@"; }

head -c 32 /dev/urandom > "$work/jwt.key"
store="$work/photos"
export DIARY_DEV_AUTH=1 PHOTO_STORE_DIR="$store"
sp=$(free_port)
start_server "$server_bin" "$db" "$work" "$sp" "$work/server.log"; server=$server_started
curl -fs "http://127.0.0.1:$sp/health" >/dev/null || { echo "bench-photos: the server did not start: $(tail -5 "$work/server.log")" >&2; exit 1; }
base="http://127.0.0.1:$sp"
sign_in() { curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$1\"}" "$base/v1/auth/dev" | jq -r .accessToken; }
for i in $(seq 1 "$USERS"); do sign_in "photos $i"; done > "$work/tokens.txt"
# One upload by curl: the answer's JSON. (Expect: off, or curl waits a second for a 100 Continue.)
upload() { curl -fsS -X POST -H "Authorization: Bearer $1" -H 'Content-Type: image/jpeg' -H 'Expect:' --data-binary "@$2" "$base/v1/photos"; }

# nginx on the store.
np=$(free_port)
mkdir -p "$work/nginx"
user_line=""; [ "$(id -u)" -eq 0 ] && user_line="user root root;"
sed -e "s|@USER@|$user_line|" -e "s|@DIR@|$work/nginx|g" -e "s|@PORT@|$np|" -e "s|@ROOT@|$store|" Benchmarks/photos/nginx.conf > "$work/nginx/nginx.conf"
nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" 2>>"$work/nginx/stderr.log" & nginx_pid=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$np/" && break; sleep 0.1; done
nginx_pids() { echo "$nginx_pid $(pgrep -P "$nginx_pid" | tr '\n' ' ')"; }
# The server's database backends: each GET asks for its photo's row.
backends() { psql -X -At -U postgres -d postgres -c "select pid from pg_stat_activity where datname = '$db' and usename = 'diary_app'" | tr '\n' ' '; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# Part 1's table for the server at $1 (pid $2): uploads a second at each UPLOAD_CONCURRENCY.
upload_table() {
    local base=$1 server=$2 c threads pids before pbefore result after pafter
    wrk -t 1 -c 1 -d 2s --timeout 30s -s Benchmarks/photos/upload.lua "$base" >/dev/null 2>&1 || true # warm-up
    printf '%-6s %9s %8s %8s %9s %8s %8s %8s %s\n' conns uploads/s MB/s p50_ms p99_ms cpu_us pg_us uploads errors
    for c in $UPLOAD_CONCURRENCY; do
        super_psql -c "update photo_upload_days set uploads = 0"
        threads=$((c < 2 ? 1 : 2))
        pids=$(backends); before=$(cpu_ticks "$server"); pbefore=$(cpu_ticks $pids)
        result=$(BODIES="$work/bodies.txt" TOKENS="$work/tokens.txt" THREADS=$threads \
            wrk -t "$threads" -c "$c" -d "${UPLOAD_SECONDS}s" --timeout 30s -s Benchmarks/photos/upload.lua "$base" | awk '/^RESULT/')
        after=$(cpu_ticks "$server"); pafter=$(cpu_ticks $pids)
        awk -v c="$c" -v r="$result" -v mean="$mean_body" -v t=$((after - before)) -v pt=$((pafter - pbefore)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
            split(r, f, " "); n = f[7] > 0 ? f[7] : 1
            printf "%-6s %9.1f %8.1f %8.1f %9.1f %8d %8d %8d %s\n", c, f[2], f[2] * mean / 1e6, f[3], f[4], t * 1e6 / hz / n, pt * 1e6 / hz / n, f[7],
                (f[5] + f[6] > 0 ? "socket errors " f[5] ", non-2xx " f[6] : "none") }'
    done
}

# Part 3's measure: SLOW_DOWNLOADS concurrent curls of $2 ($3 bytes) at LIMIT_RATE, with the
# VmRSS of server $1 (idle, before them; peak) and the bytes it wrote meanwhile (wchar).
slow_downloads() {
    local pid=$1 url=$2 bytes=$3 idle peak samples start end running rss complete wrote child
    local -a slow
    rm -f "$work"/slow.*
    idle=$(rss_kib "$pid")
    wrote=$(awk '/^wchar/ {print $2}' "/proc/$pid/io")
    slow=()
    for i in $(seq 1 "$SLOW_DOWNLOADS"); do
        curl -s -o /dev/null --limit-rate "$LIMIT_RATE" -w '%{http_code} %{size_download}\n' "$url" > "$work/slow.$i" & slow+=($!)
    done
    peak=$idle samples=0 start=$(date +%s%N)
    while :; do
        rss=$(rss_kib "$pid"); samples=$((samples + 1))
        [ "$rss" -gt "$peak" ] && peak=$rss
        running=0; for child in "${slow[@]}"; do kill -0 "$child" 2>/dev/null && running=1 && break; done
        [ $running = 1 ] || break
        sleep 0.1
    done
    end=$(date +%s%N)
    wait "${slow[@]}" || true
    complete=$(cat "$work"/slow.* | awk -v want="$bytes" '$1 == 200 && $2 == want' | wc -l)
    echo "photo: $bytes bytes stored; downloads complete (200, $bytes bytes): $complete/$SLOW_DOWNLOADS in $(awk -v ns=$((end - start)) 'BEGIN {printf "%.1f", ns / 1e9}') s; $samples samples"
    awk -v idle="$idle" -v peak="$peak" -v after="$(rss_kib "$pid")" 'BEGIN {
        printf "VmRSS: idle %.1f MiB, peak %.1f MiB, peak - idle %.1f MiB (target < 64 MiB: %s); after %.1f MiB\n",
            idle / 1024, peak / 1024, (peak - idle) / 1024, ((peak - idle) / 1024 < 64 ? "met" : "NOT met"), after / 1024 }'
    echo "the server wrote $(awk -v before="$wrote" '/^wchar/ {printf "%.1f", ($2 - before) / 1e6}' "/proc/$pid/io") MB meanwhile (wchar: sockets, logs and files)"
}

out="Benchmarks/results/photos-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# make bench-photos, $(date -u +%FT%TZ), $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# PHOTOS=$PHOTOS PHOTO_SIZE=$PHOTO_SIZE (mean $mean_body bytes) BIG_SIZE=${side}x${side} ($big_file bytes) USERS=$USERS UPLOAD_CONCURRENCY='$UPLOAD_CONCURRENCY' UPLOAD_SECONDS=$UPLOAD_SECONDS"
    echo "# CONNECTIONS=$CONNECTIONS DOWNLOAD_SECONDS=$DOWNLOAD_SECONDS ROUNDS=$ROUNDS EVICT=$EVICT SLOW_DOWNLOADS=$SLOW_DOWNLOADS LIMIT_RATE=$LIMIT_RATE PERF=$PERF"
    echo "# $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | sed 's/^nginx version: //') (worker_processes auto, sendfile on, access_log off), $(convert -version | head -1 | cut -d' ' -f2-3), curl $(curl --version | head -1 | cut -d' ' -f2)"
    if [ -n "${SERVER_BIN:-}" ]; then built="SERVER_BIN, built elsewhere${SERVER_NOTE:+: $SERVER_NOTE}"
    else built="git $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Package.swift || echo ', Sources with uncommitted changes')"; fi
    echo "# server: $server_bin ($built), DB_POOL_SIZE default, LOG_LEVEL=warning; MB = 10^6 bytes, MiB = 2^20"

    echo
    echo "## 1. uploads: $PHOTOS distinct JPEGs in turn, wrk ${UPLOAD_SECONDS}s a run, --timeout 30s; cpu_us = the server's CPU per upload, pg_us its backends'"
    upload_table "$base" "$server"
    echo "stored: $(find "$store" -mindepth 2 -type f -not -path "$store/tmp/*" | wc -l) files, $(du -sm "$store" | cut -f1) MiB"

    # Signed URLs for every photo, from new uploads (new rows, same files); their hashes from the rows.
    super_psql -c "update photo_upload_days set uploads = 0"
    minted=0
    while read -r file; do
        [ $((minted % 150)) -eq 0 ] && mint_token=$(sign_in "photos downloads $minted")
        upload "$mint_token" "$file" | jq -r '[(.id | ascii_downcase), .url, .bytes] | @tsv'
        minted=$((minted + 1))
    done < "$work/bodies.txt" > "$work/minted.tsv"
    super_psql -F $'\t' -c "select id, content_hash from photo_uploads" > "$work/hashes.tsv"
    awk -F '\t' 'NR == FNR {hash[$1] = $2; next} {print $2 "\t" hash[$1] "\t" $3}' "$work/hashes.tsv" "$work/minted.tsv" > "$work/photos.tsv"
    cut -f1 "$work/photos.tsv" > "$work/server-paths.txt"
    awk -F '\t' '{print "/" substr($2, 1, 2) "/" $2}' "$work/photos.tsv" > "$work/nginx-paths.txt"
    awk -F '\t' -v root="$store" '{print root "/" substr($2, 1, 2) "/" $2}' "$work/photos.tsv" > "$work/files-paths.txt"
    head -1 "$work/server-paths.txt" > "$work/server-one.txt"; head -1 "$work/nginx-paths.txt" > "$work/nginx-one.txt"; head -1 "$work/files-paths.txt" > "$work/files-one.txt"
    read -r one_url one_hash one_bytes < <(head -1 "$work/photos.tsv")
    for check in "$base$one_url" "http://127.0.0.1:$np$(head -1 "$work/nginx-one.txt")"; do
        [ "$(curl -fsS "$check" | sha256sum | cut -d' ' -f1)" = "$one_hash" ] || { echo "bench-photos: $check does not give the photo's bytes" >&2; exit 1; }
    done

    echo
    echo "## 2. downloads: the server's signed URL against nginx on the same file(s); wrk -t 2 -c $CONNECTIONS, ${DOWNLOAD_SECONDS}s a run, $ROUNDS rounds alternating the order"
    echo "# single = one photo of $one_bytes bytes; many = $(wc -l < "$work/photos.tsv") distinct photos in turn; cpu_us = CPU per request of the server or of nginx (master + workers), pg_us of the server's backends"
    echo "# evicted = the case's pages still in the page cache after eviction, by mincore"
    hz=$(getconf CLK_TCK)
    # One wrk run: target (server|nginx), paths file, extra wrk options → "req/s MB/s p50 p99 cpu_us pg_us errors".
    download() {
        local target=$1 paths=$2; shift 2
        local url=$base pids=$server pg="" result before after pbefore pafter
        [ "$target" = nginx ] && { url="http://127.0.0.1:$np"; pids=$(nginx_pids); }
        [ "$target" = server ] && pg=$(backends)
        before=$(cpu_ticks $pids); pbefore=$(cpu_ticks $pg)
        result=$(PATHS="$paths" wrk -t 2 -c "$CONNECTIONS" -d "${DOWNLOAD_SECONDS}s" --timeout 10s "$@" -s Benchmarks/photos/get.lua "$url" | awk '/^RESULT/')
        after=$(cpu_ticks $pids); pafter=$(cpu_ticks $pg)
        awk -v r="$result" -v t=$((after - before)) -v pt=$((pafter - pbefore)) -v hz="$hz" 'BEGIN {
            split(r, f, " "); n = f[7] > 0 ? f[7] : 1
            printf "%.1f %.1f %.2f %.2f %d %d %s\n", f[2], f[8] / (f[7] / f[2]) / 1e6, f[3], f[4], t * 1e6 / hz / n, pt * 1e6 / hz / n,
                (f[5] + f[6] > 0 ? "socket_errors=" f[5] ",non-2xx/3xx=" f[6] : "-") }'
    }
    # One pass over every photo by one curl, CONNECTIONS at a time → "files/s MB/s ok/total".
    onepass() {
        local target=$1 prefix=$base paths="$work/server-paths.txt" start end
        [ "$target" = nginx ] && { prefix="http://127.0.0.1:$np"; paths="$work/nginx-paths.txt"; }
        sed "s|.*|url = \"$prefix&\"\noutput = \"/dev/null\"|" "$paths" > "$work/onepass.cfg"
        start=$(date +%s%N)
        curl -s --parallel --parallel-immediate --parallel-max "$CONNECTIONS" -K "$work/onepass.cfg" -w '%{http_code} %{size_download}\n' > "$work/onepass.out" 2>/dev/null || true
        end=$(date +%s%N)
        awk -v ns=$((end - start)) -v want="$(cut -f3 "$work/photos.tsv" | awk '{s += $1} END {print s}')" '
            {n++; bytes += $2; if ($1 == 200) ok++}
            END {printf "%.1f %.1f %d/%d%s\n", n / (ns / 1e9), bytes / (ns / 1e9) / 1e6, ok, n, (bytes == want ? "" : " short:" bytes "/" want)}' "$work/onepass.out"
    }
    evict() { python3 Benchmarks/photos/pagecache.py evict "$EVICT" $(cat "$1"); }
    printf '%-17s %-6s %5s %9s %8s %7s %7s %6s %5s %-26s %s\n' case target round req/s MB/s p50_ms p99_ms cpu_us pg_us evicted errors
    : > "$work/rows"
    for case in single-cached single-uncached many-cached many-uncached; do
        paths_of() { if [[ $case == single* ]]; then echo "$work/$1-one.txt"; else echo "$work/$1-paths.txt"; fi; }
        files=$(paths_of files)
        if [[ $case == *-cached ]]; then
            cat $(cat "$files") > /dev/null
            for target in server nginx; do PATHS=$(paths_of "$target") wrk -t 2 -c "$CONNECTIONS" -d 2s -s Benchmarks/photos/get.lua "$([ $target = server ] && echo "$base" || echo "http://127.0.0.1:$np")" >/dev/null; done
        fi
        for round in $(seq 1 "$ROUNDS"); do
            order="server nginx"; [ $((round % 2)) -eq 0 ] && order="nginx server"
            for target in $order; do
                evicted=$(python3 Benchmarks/photos/pagecache.py resident $(cat "$files") | awk '{printf "%d/%d", $1, $2}')
                [[ $case == *-uncached ]] && evicted=$(evict "$files" | awk '{printf "%s %d/%d", $1, $2, $3}')
                row=$(download "$target" "$(paths_of "$target")")
                read -r rps mbs p50 p99 cpu pg errors <<< "$row"
                [ "$target" = nginx ] && pg=-
                printf '%-17s %-6s %5s %9s %8s %7s %7s %6s %5s %-26s %s\n' "$case" "$target" "$round" "$rps" "$mbs" "$p50" "$p99" "$cpu" "$pg" "$evicted" "$errors" | tee -a "$work/rows"
            done
        done
    done
    for case in onepass-cached onepass-uncached; do
        for round in $(seq 1 "$ROUNDS"); do
            order="server nginx"; [ $((round % 2)) -eq 0 ] && order="nginx server"
            for target in $order; do
                evicted=$(python3 Benchmarks/photos/pagecache.py resident $(cat "$work/files-paths.txt") | awk '{printf "%d/%d", $1, $2}')
                [ "$case" = onepass-uncached ] && evicted=$(evict "$work/files-paths.txt" | awk '{printf "%s %d/%d", $1, $2, $3}')
                read -r fps mbs ok <<< "$(onepass "$target")"
                printf '%-17s %-6s %5s %9s %8s %7s %7s %6s %5s %-26s %s\n' "$case" "$target" "$round" "$fps" "$mbs" - - - - "$evicted" "complete=$ok" | tee -a "$work/rows"
            done
        done
    done
    echo "# onepass: req/s = files a second over the whole pass, by one curl process (--parallel-max $CONNECTIONS); no latency"
    echo "# server / nginx: ratio = the median over the rounds of server req/s / nginx req/s in the same round (the target, >= 0.70),"
    echo "#   mean = ratio of the means; cpu = nginx's CPU per request / the server's and its backends' (median), what the ratio would be"
    echo "#   were both CPU-bound with the cores to themselves (here wrk and the other engineer's work share the 2 cores)"
    awk 'function median(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        { rps[$1, $2, $3] = $4; cpu[$1, $2, $3] = $8; pg[$1, $2, $3] = $9; if ($3 > rounds) rounds = $3; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        END { for (i = 1; i <= k; i++) { c = order[i]; s = g = 0; m = 0; delete q; delete e
                for (r = 1; r <= rounds; r++) { s += rps[c, "server", r]; g += rps[c, "nginx", r]; q[r] = rps[c, "server", r] / rps[c, "nginx", r]
                    if (cpu[c, "server", r] != "-") e[++m] = cpu[c, "nginx", r] / (cpu[c, "server", r] + pg[c, "server", r]) }
                ratio = median(q, rounds)
                printf "%-17s server %8.1f req/s  nginx %8.1f req/s  ratio %.3f  mean %.3f  cpu %s  %s\n", c, s / rounds, g / rounds, ratio, s / g,
                    (m ? sprintf("%.3f", median(e, m)) : "-"), (ratio >= 0.70 ? "target met" : "target NOT met") } }' "$work/rows"

    echo
    echo "## 304s: the signed URL with If-None-Match, server alone, wrk -t 2 -c $CONNECTIONS, $((DOWNLOAD_SECONDS * ROUNDS))s"
    status=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: \"$one_hash\"" "$base$one_url")
    [ "$status" = 304 ] || echo "expected 304, got $status"
    read -r rps _ p50 p99 cpu pg errors <<< "$(DOWNLOAD_SECONDS=$((DOWNLOAD_SECONDS * ROUNDS)) download server "$work/server-one.txt" -H "If-None-Match: \"$one_hash\"")"
    echo "304: $rps req/s, p50 $p50 ms, p99 $p99 ms, server CPU $cpu µs and its backends' $pg µs per request, errors: $errors"

    if [ "$PERF" = 1 ]; then
        echo
        echo "## perf: the server during single-cached (perf record -g -p, 5 s, not counted above); top symbols, self time"
        cat "$(head -1 "$work/files-one.txt")" > /dev/null
        perf record -q -g -p "$server" -o "$work/perf.data" -- sleep 5 >/dev/null 2>&1 &
        perf_pid=$!
        sleep 0.3
        DOWNLOAD_SECONDS=6 download server "$work/server-one.txt" > "$work/perf-run"
        wait "$perf_pid" || true
        [ -n "${PERF_DATA:-}" ] && cp "$work/perf.data" "$PERF_DATA"
        echo "# during it: $(awk '{print $1 " req/s, " $2 " MB/s"}' "$work/perf-run")"
        perf report -i "$work/perf.data" --stdio --no-children -g none --sort dso --percent-limit 2 2>/dev/null | grep -v '^#' | grep -v '^$' | head -12
        echo "#"
        perf report -i "$work/perf.data" --stdio --no-children -g none --sort dso,symbol --percent-limit 1 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 \
            | { command -v swift >/dev/null && swift demangle --simplified --compact || cat; } | cut -c1-180 | sed 's/ *$//'
    fi

    echo
    echo "## 3. memory: $SLOW_DOWNLOADS concurrent downloads of a $big_file-byte JPEG at $LIMIT_RATE/s each, from a second, fresh server"
    big_json=$(upload "$(sign_in "photos big")" "$work/big.jpg")
    big_url=$(jq -r .url <<< "$big_json"); big_bytes=$(jq -r .bytes <<< "$big_json")
    p2=$(free_port)
    start_server "$server_bin" "$db" "$work" "$p2" "$work/server2.log"; server2=$server_started
    curl -fsS -o /dev/null "http://127.0.0.1:$p2$one_url"; curl -fsS -o /dev/null -r 0-1023 "http://127.0.0.1:$p2$big_url"
    sleep 1
    idle=$(rss_kib "$server2")
    slow_downloads "$server2" "http://127.0.0.1:$p2$big_url" "$big_bytes"
    kill "$server2"; wait "$server2" 2>/dev/null || true

    echo
    echo "## 4. the S3 store: moto's S3 server (scripts/moto.sh) on loopback, path-style, access checks on"
    scripts/moto.sh start >&2
    eval "$(scripts/moto.sh env)"
    s3_prefix="bench-$(date +%s)-"
    s3_settings=(PHOTO_STORE=s3 S3_ENDPOINT="$TEST_S3_ENDPOINT" S3_REGION="$TEST_S3_REGION" S3_BUCKET="$TEST_S3_BUCKET"
        S3_ACCESS_KEY_ID="$TEST_S3_ACCESS_KEY_ID" S3_SECRET_ACCESS_KEY="$TEST_S3_SECRET_ACCESS_KEY" S3_PATH_STYLE=1 S3_PREFIX="$s3_prefix")
    # start_with_settings PORT LOG VARIABLE=VALUE...: a server with these settings too; its pid in server_started.
    start_with_settings() {
        local port=$1 log=$2; shift 2
        (export "$@"; start_server "$server_bin" "$db" "$work" "$port" "$log"; echo "$server_started" > "$work/started"; wait) &
        for _ in $(seq 1 100); do [ -s "$work/started" ] && curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
        server_started=$(cat "$work/started"); rm -f "$work/started"
        curl -fs "http://127.0.0.1:$port/health" >/dev/null || { echo "bench-photos: the server did not start: $(tail -5 "$log")" >&2; exit 1; }
    }
    p3=$(free_port)
    start_with_settings "$p3" "$work/server3.log" "${s3_settings[@]}"; server3=$server_started
    echo "### uploads into the bucket (the folder's are part 1)"
    upload_table "http://127.0.0.1:$p3" "$server3"
    echo "### $SLOW_DOWNLOADS slow downloads of the $big_file-byte JPEG, PHOTO_URLS=server: streamed from the bucket through the server"
    base=http://127.0.0.1:$p3
    s3_big=$(upload "$(sign_in "photos big s3")" "$work/big.jpg")
    curl -fsS -o /dev/null -r 0-1023 "$base$(jq -r .url <<< "$s3_big")"
    slow_downloads "$server3" "$base$(jq -r .url <<< "$s3_big")" "$(jq -r .bytes <<< "$s3_big")"
    kill "$server3" 2>/dev/null || true

    echo "### the same, PHOTO_URLS=presigned (moto's open instance): the bytes come from the bucket, not the server"
    p4=$(free_port)
    start_with_settings "$p4" "$work/server4.log" "${s3_settings[@]}" S3_ENDPOINT="$TEST_S3_OPEN_ENDPOINT" PHOTO_URLS=presigned; server4=$server_started
    base=http://127.0.0.1:$p4
    presigned=$(upload "$(sign_in "photos big presigned")" "$work/big.jpg")
    presigned_url=$(jq -r .url <<< "$presigned")
    echo "URL: ${presigned_url%%\?*}?… ($(grep -o 'X-Amz-Expires=[0-9]*' <<< "$presigned_url"))"
    slow_downloads "$server4" "$presigned_url" "$(jq -r .bytes <<< "$presigned")"
    echo "# target: the server writes none of the photo's $SLOW_DOWNLOADS x $(jq -r .bytes <<< "$presigned") bytes in presigned mode"
    kill "$server4" 2>/dev/null || true
    echo
    echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
echo "wrote $out" >&2
