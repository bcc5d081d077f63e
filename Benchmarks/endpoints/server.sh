# Shared by Benchmarks/endpoints.sh, ab-servers.sh and realtime.sh (sourced, from the
# repository root): a seeded database with its users' tokens, and release servers on it.

# wrk, installed from Debian's packages if missing.
ensure_wrk() {
    command -v wrk >/dev/null || { local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo; $sudo apt-get install -y -qq wrk >&2; }
}

# The server binary to measure: DIARY_SERVER_BIN, else this checkout's release build, built here.
release_server() {
    if [ -n "${DIARY_SERVER_BIN:-}" ]; then
        echo "$DIARY_SERVER_BIN"
        return
    fi
    echo "building the release server" >&2
    swift build -c release --product diary-server >&2
    echo "$(swift build -c release --show-bin-path)/diary-server"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Database $1 seeded afresh; $2/jwt.key signs the tokens in $2/users.tsv, which wrk.lua reads.
seed_with_users() {
    Benchmarks/endpoints/seed-database.sh "$1"
    head -c 32 /dev/urandom > "$2/jwt.key"
    python3 Benchmarks/endpoints/tokens.py "$2/jwt.key" "$2/users.tsv"
}

# The same data set in database $1 on the Citus cluster of scripts/citus.sh (started if it is
# not), laid out by `$2 migrate --citus`. Sets citus_env to the coordinator's variables and
# leaves the caller's PGHOST and PGPORT as they were.
seed_on_citus() {
    local db=$1 binary=$2 single_env="PGHOST=$PGHOST PGPORT=$PGPORT" url
    (unset PGHOST PGPORT; scripts/citus.sh start >&2)
    citus_env=$(unset PGHOST PGPORT; scripts/citus.sh env)
    eval "$citus_env"
    scripts/citus.sh fresh "$db" >&2
    url="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST"
    echo "seeding $db on the cluster" >&2
    "$binary" migrate --database-url "$url" >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -U diary_owner -d "$db" -f Benchmarks/endpoints/seed.sql >/dev/null 2>&1
    "$binary" migrate --citus --database-url "$url" >/dev/null
    eval "export $single_env"
}

# Starts server binary $1 on database $2 with the key in $3, on port $4, logging to $5;
# sets server_started to its pid and returns once /health answers.
# With VIA_PGBOUNCER=1 (after start_pgbouncer), through PgBouncer with unnamed statements.
start_server() {
    local url="postgres://diary_app@localhost:$PGPORT/$2?host=$PGHOST" prepared=${DB_PREPARED_STATEMENTS:-1}
    if [ "${VIA_PGBOUNCER:-0}" = 1 ]; then
        url="postgres://diary_app@127.0.0.1:$PGBOUNCER_PORT/$2" prepared=0
    fi
    DATABASE_URL="$url" DB_PREPARED_STATEMENTS=$prepared DIARY_JWT_KEY_FILE="$3/jwt.key" DIARY_DATA_DIR="$3" \
        PORT=$4 LOG_LEVEL=warning "$1" serve 2>"$5" &
    server_started=$!
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$4/health" >/dev/null && break; sleep 0.1; done
}

# CPU time (clock ticks) used so far by the processes given, gone ones counting 0.
cpu_ticks() { local pid total=0; for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done; echo "$total"; }

# With VIA_PGBOUNCER=1: the `bench` PgBouncer in transaction mode, as many server connections
# as the server's pool (PGBOUNCER_POOL_SIZE, default 8), and PGBOUNCER_PORT set; else nothing.
start_pgbouncer() {
    [ "${VIA_PGBOUNCER:-0}" = 1 ] || return 0
    PGBOUNCER_POOL_SIZE=${PGBOUNCER_POOL_SIZE:-8} scripts/pgbouncer.sh start bench
    eval "$(scripts/pgbouncer.sh env bench)"
}

# pgbench's connection and statement mode: PgBouncer does not keep prepared statements.
pgbench_target() {
    if [ "${VIA_PGBOUNCER:-0}" = 1 ]; then echo "-h 127.0.0.1 -p $PGBOUNCER_PORT -M extended"; else echo "-M prepared"; fi
}
