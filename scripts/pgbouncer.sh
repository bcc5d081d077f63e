#!/usr/bin/env bash
# A project-local PgBouncer in transaction pooling mode, in front of scripts/postgres.sh's cluster.
#
#   scripts/pgbouncer.sh start [NAME]   install pgbouncer if missing, start the cluster (scripts/postgres.sh start),
#                                       write the instance's config, start it unless it runs (else reload it),
#                                       wait until it accepts connections
#   scripts/pgbouncer.sh stop [NAME]    stop the instance; harmless if it does not run
#   scripts/pgbouncer.sh env [NAME]     print the variables that point at it (eval "$(scripts/pgbouncer.sh env test)")
#
# NAME (default test) selects an instance, so several can run at once (test, bench): each lives in
# .data/pgbouncer-NAME (git-ignored) with its pgbouncer.ini, userlist.txt, log, pid file, socket folder
# and the port it was first given, a free one from 56432 up. It listens on 127.0.0.1 and on a socket in
# that folder. Every database name maps to the same-named database on the cluster, reached as the
# client's user (diary_app, diary_owner or postgres, all trusted). Each database/user pair gets
# PGBOUNCER_POOL_SIZE (default 1) server connections, so with the default every client of a pair shares
# one server connection, a transaction at a time: session state (prepared statements, SET, advisory
# locks) does not survive a transaction. The config is rewritten on every start, and a running
# instance reloads it. PgBouncer refuses to run as root, so under root it runs as diary-postgres.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"
data_root="$root/.data"
name=${2:-test}
# The cluster scripts/postgres.sh starts (it honours DIARY_PG_CLUSTER the same way).
cluster="${DIARY_PG_CLUSTER:-$data_root/postgres}"
cluster_port_file="$cluster/port"
instance="$data_root/pgbouncer-$name"
ini="$instance/pgbouncer.ini"
userlist="$instance/userlist.txt"
log_file="$instance/pgbouncer.log"
pid_file="$instance/pgbouncer.pid"
socket_dir="$instance/run"
port_file="$instance/port"
database=${DIARY_DB_NAME:-diary}
pool_size=${PGBOUNCER_POOL_SIZE:-1}

log() { echo "pgbouncer.sh: $*" >&2; }

pgbouncer_bin() {
    command -v pgbouncer 2>/dev/null && return 0
    [ -x /usr/sbin/pgbouncer ] && { echo /usr/sbin/pgbouncer; return 0; }
    return 1
}

psql_bin() {
    local dir
    for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
        [ -x "$dir/psql" ] && { echo "$dir/psql"; return 0; }
    done
    command -v psql
}

ensure_installed() {
    pgbouncer_bin >/dev/null && return 0
    log "installing pgbouncer"
    apt_install pgbouncer
    # Debian's package may start a pgbouncer of its own on 6432; ours does not need it.
}

prepare_owner() {
    [ "$(id -u)" -eq 0 ] || return 0
    ensure_service_user
    # scripts/postgres.sh start has already opened every parent folder to the service user.
    chown -R "$service_user" "$instance"
}

# A free port from 56432 up (scripts/postgres.sh takes 55432–56431), skipping the ones other
# instances remember, which may be stopped now but will want theirs back.
free_port() {
    local taken=() file
    for file in "$data_root"/pgbouncer-*/port; do
        [ -f "$file" ] && taken+=("$(cat "$file")")
    done
    free_port_between 56432 57431 "${taken[@]}"
}

# The pid of the running instance, if any (a pgbouncer process, not a stale file's reused pid).
running_pid() {
    local pid
    [ -f "$pid_file" ] || return 1
    pid=$(cat "$pid_file" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null || echo pgbouncer)" = pgbouncer ] || return 1
    echo "$pid"
}

accepts_connections() {
    PGCONNECT_TIMEOUT=2 PGOPTIONS='' "$(psql_bin)" -X -q -h 127.0.0.1 -p "$1" -U diary_app -d "$database" \
        -c 'select 1' >/dev/null 2>&1
}

write_config() {
    local port=$1 cluster_port=$2
    cat > "$userlist" <<'TXT'
"diary_app" ""
"diary_owner" ""
"postgres" ""
TXT
    cat > "$ini" <<INI
;; Written by scripts/pgbouncer.sh on every start: edits here are lost.
[databases]
;; Any database name: the same-named database on the cluster, as the client's user.
* = host=127.0.0.1 port=$cluster_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $socket_dir
auth_type = trust
auth_file = $userlist
pool_mode = transaction
default_pool_size = $pool_size
max_client_conn = 1000
max_db_connections = 0
;; Transaction pooling: nothing to reset between clients.
server_reset_query =
server_check_delay = 1
ignore_startup_parameters = extra_float_digits
admin_users = postgres
logfile = $log_file
pidfile = $pid_file
log_connections = 0
log_disconnections = 0
INI
    chmod 644 "$ini" "$userlist"
}

# What the instance logged since this start began (log_offset, set by start).
new_log_lines() {
    tail -c +$((log_offset + 1)) "$log_file" 2>/dev/null || true
}

start() {
    [[ "$pool_size" =~ ^[1-9][0-9]*$ ]] || { log "PGBOUNCER_POOL_SIZE must be a positive integer, not '$pool_size'"; exit 2; }
    ensure_installed
    # Idempotent: creates and starts the cluster only when needed.
    "$root/scripts/postgres.sh" start
    local bin port pid log_offset=0 i
    bin=$(pgbouncer_bin)
    mkdir -p "$instance" "$socket_dir"
    if [ -f "$port_file" ]; then port=$(cat "$port_file"); else port=$(free_port); fi
    echo "$port" > "$port_file"
    write_config "$port" "$(cat "$cluster_port_file")"
    prepare_owner
    [ -f "$log_file" ] && log_offset=$(stat -c %s "$log_file")
    if pid=$(running_pid); then
        kill -HUP "$pid"
        log "$name already running on port $port (pid $pid); reloaded its config"
    else
        rm -f "$pid_file"
        log "starting $name on port $port (pool size $pool_size)"
        as_owner "$bin" -d "$ini" || { new_log_lines >&2; exit 1; }
    fi
    for i in $(seq 1 50); do
        if accepts_connections "$port"; then
            # PgBouncer only warns when it cannot take the TCP port but has its socket, and then
            # whatever holds the port answered.
            [[ "$(new_log_lines)" == *"cannot listen on 127.0.0.1:$port"* ]] || return 0
            log "$name cannot listen on 127.0.0.1:$port, which something else holds; its log says:"
            new_log_lines | tail -n 20 >&2
            stop
            exit 1
        fi
        [ "$i" -gt 5 ] && ! running_pid >/dev/null && break
        sleep 0.2
    done
    log "$name does not accept connections on port $port; its log says:"
    new_log_lines | tail -n 20 >&2
    exit 1
}

stop() {
    local pid i
    pid=$(running_pid) || { rm -f "$pid_file"; return 0; }
    # SIGTERM: an immediate shutdown in PgBouncer up to 1.22, a shutdown that waits for clients after.
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$pid_file"; return 0; }
        sleep 0.2
    done
    log "$name (pid $pid) did not stop within 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pid_file"
}

print_env() {
    [ -f "$port_file" ] || { log "no instance $name yet: run scripts/pgbouncer.sh start $name"; exit 1; }
    local port
    port=$(cat "$port_file")
    echo "export PGBOUNCER_HOST='127.0.0.1' PGBOUNCER_PORT='$port'"
    # What the tests' PgBouncer route reads; they replace the database name.
    echo "export TEST_PGBOUNCER_URL=\"postgres://diary_app@127.0.0.1:$port/postgres\""
}

[[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "$0: NAME must be letters, digits, _ or -" >&2; exit 2; }
case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop|env [NAME]" >&2; exit 2 ;;
esac
