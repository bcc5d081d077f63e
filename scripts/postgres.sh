#!/usr/bin/env bash
# A project-local PostgreSQL 15 for `make run` and `make test`.
#
#   scripts/postgres.sh start   install what is missing, create the cluster once, start it, create roles and database
#   scripts/postgres.sh stop    stop the cluster
#   scripts/postgres.sh env     print the variables that point at it (eval "$(scripts/postgres.sh env)")
#
# The cluster lives in .data/postgres (git-ignored) and listens on 127.0.0.1 and on a
# socket in that folder, on PGPORT if set, else on the port it was first given, else on
# a free one from 55432 up. PostgreSQL refuses to run as root, so under root the
# cluster belongs to an unprivileged system user, diary-postgres.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"
data_root="$root/.data"
# DIARY_PG_CLUSTER (a folder under .data) gives a second cluster, for Benchmarks/rls-instructions.sh
# and `make test`. DIARY_PG_FSYNC (default on) and DIARY_PG_MAX_CONNECTIONS (default 1000) set
# those settings; a running cluster started with another max_connections is restarted.
# DIARY_PG_PRELOAD names shared_preload_libraries (scripts/citus.sh: citus), and
# DIARY_PG_WAL_LEVEL sets wal_level (scripts/citus.sh: logical, which moving a shard while it
# stays writable needs); a running cluster started with another wal_level is restarted. With
# logical, wal_receiver_status_interval is 1s: a move's last catch-up, with the shard's writes
# blocked, waits for the receiving node to report its position, every 10 s by default.
cluster="${DIARY_PG_CLUSTER:-$data_root/postgres}"
pgdata="$cluster/data"
socket_dir="$cluster/run"
log="$cluster/postgres.log"
port_file="$cluster/port"
database=${DIARY_DB_NAME:-diary}

log() { echo "postgres.sh: $*" >&2; }

pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
        [ -x "$dir/pg_ctl" ] && { echo "$dir"; return 0; }
    done
    return 1
}

ensure_installed() {
    local missing=()
    pg_bin >/dev/null || missing+=(postgresql-15 postgresql-contrib)
    pkg-config --exists libpq 2>/dev/null || missing+=(libpq-dev)
    [ -d /usr/share/postgresql/15/extension ] && [ ! -f /usr/share/postgresql/15/extension/pgtap.control ] && missing+=(postgresql-15-pgtap)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
    # Debian's package starts a cluster of its own on 5432; ours does not need it.
}

prepare_owner() {
    [ "$(id -u)" -eq 0 ] || return 0
    ensure_service_user
    # The service user must be able to reach the data folder through every parent. This
    # changes the machine (a checkout under /root makes /root traversable by everyone), so
    # each change is said, and DIARY_PG_NO_CHMOD=1 refuses instead.
    local dir="$data_root"
    while [ "$dir" != "/" ]; do
        dir=$(dirname "$dir")
        runuser -u "$service_user" -- test -x "$dir" 2>/dev/null && continue
        if [ "${DIARY_PG_NO_CHMOD:-0}" = 1 ]; then
            log "$service_user cannot reach $cluster through $dir; give it search permission (chmod o+x $dir) or move the checkout"
            exit 1
        fi
        log "chmod o+x $dir: PostgreSQL runs as $service_user (it refuses root), which must pass through $dir to reach $cluster"
        chmod o+x "$dir"
    done
    # Only what is not the service user's yet: a running cluster creates and drops files
    # under this folder all the time (tests' databases), and a recursive chown over them
    # fails on the first one that vanishes mid-walk.
    find "$cluster" -ignore_readdir_race ! -user "$service_user" -exec chown "$service_user" {} + 2>/dev/null \
        || find "$cluster" -ignore_readdir_race ! -user "$service_user" -exec chown "$service_user" {} +
}

# A free port from 55432 up, skipping the ones other clusters here remember (make run's and
# the tests'), which may be stopped now but will want theirs back.
free_port() {
    local taken=() file
    for file in "$data_root"/postgres*/port; do
        [ -f "$file" ] && [ "$file" != "$port_file" ] && taken+=("$(cat "$file")")
    done
    free_port_between 55432 56431 "${taken[@]}"
}

chosen_port() {
    if [ -n "${PGPORT:-}" ]; then echo "$PGPORT"
    elif [ -f "$port_file" ]; then cat "$port_file"
    else free_port
    fi
}

psql_super() {
    "$(pg_bin)/psql" -X -q -v ON_ERROR_STOP=1 -h "$socket_dir" -p "$(cat "$port_file")" -U postgres "$@"
}

start() {
    ensure_installed
    local bin port
    bin=$(pg_bin)
    mkdir -p "$cluster" "$socket_dir"
    prepare_owner
    if [ ! -f "$pgdata/PG_VERSION" ]; then
        log "creating cluster in $pgdata"
        as_owner "$bin/initdb" -D "$pgdata" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    fi
    port=$(chosen_port)
    # A running cluster listens where the port file says; a new PGPORT restarts it there,
    # so the file never names a port nobody listens on.
    if as_owner "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1 && [ -f "$port_file" ] && [ "$(cat "$port_file")" != "$port" ]; then
        log "PGPORT=$port, but the cluster listens on $(cat "$port_file"): restarting it on $port"
        as_owner "$bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
    fi
    local connections=${DIARY_PG_MAX_CONNECTIONS:-1000}
    if as_owner "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1 && [ -f "$port_file" ] \
        && [ "$(psql_super -d postgres -At -c 'show max_connections' 2>/dev/null)" != "$connections" ]; then
        log "restarting with max_connections=$connections"
        as_owner "$bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
    fi
    if [ -n "${DIARY_PG_WAL_LEVEL:-}" ] && as_owner "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1 && [ -f "$port_file" ] \
        && [ "$(psql_super -d postgres -At -c 'show wal_level' 2>/dev/null)" != "$DIARY_PG_WAL_LEVEL" ]; then
        log "restarting with wal_level=$DIARY_PG_WAL_LEVEL"
        as_owner "$bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
    fi
    echo "$port" > "$port_file"
    if ! as_owner "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
        log "starting on port $port"
        as_owner "$bin/pg_ctl" -D "$pgdata" -l "$log" -w -t 60 start \
            -o "-p $port -k $socket_dir -c listen_addresses=127.0.0.1 -c max_connections=$connections -c shared_buffers=256MB -c fsync=${DIARY_PG_FSYNC:-on}${DIARY_PG_PRELOAD:+ -c shared_preload_libraries=$DIARY_PG_PRELOAD}${DIARY_PG_WAL_LEVEL:+ -c wal_level=$DIARY_PG_WAL_LEVEL}${DIARY_PG_WAL_LEVEL:+ -c wal_receiver_status_interval=1s}" >/dev/null \
            || { tail -n 20 "$log" >&2; exit 1; }
    fi
    # A cluster restored to a point (scripts/pitr.sh) or recovering from a crash accepts
    # connections read-only until its recovery ends; the roles and database wait for that.
    local waited=0
    until [ "$(psql_super -d postgres -At -c 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; do
        [ $waited -lt 600 ] || { log "still in recovery after 60 s"; tail -n 20 "$log" >&2; exit 1; }
        sleep 0.1; waited=$((waited + 1))
    done
    psql_super -d postgres -q -f "$root/sql/roles.sql" >/dev/null
    psql_super -d postgres <<SQL
select 'create database $database owner diary_owner' where not exists (select from pg_database where datname = '$database') \gexec
SQL
}

stop() {
    local bin
    bin=$(pg_bin) || exit 0
    [ -f "$pgdata/PG_VERSION" ] || exit 0
    as_owner "$bin/pg_ctl" -D "$pgdata" -m fast stop >/dev/null 2>&1 || true
}

print_env() {
    local port
    port=$(cat "$port_file")
    echo "export PGHOST='$socket_dir' PGPORT='$port'"
    # Values already in the environment win, so `DATABASE_URL=… make run` reaches the server.
    echo "export DATABASE_URL=\"\${DATABASE_URL:-postgres://diary_app@localhost:$port/$database?host=$socket_dir}\""
    echo "export MIGRATION_DATABASE_URL=\"\${MIGRATION_DATABASE_URL:-postgres://diary_owner@localhost:$port/$database?host=$socket_dir}\""
    echo "export TEST_DATABASE_URL=\"\${TEST_DATABASE_URL:-postgres://postgres@localhost:$port/postgres?host=$socket_dir}\""
    echo "export DIARY_PG_BIN='$(pg_bin)' DIARY_PG_DATA='$pgdata' DIARY_PG_USER='$( [ "$(id -u)" -eq 0 ] && echo "$service_user" || id -un)'"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
