#!/usr/bin/env bash
# A Citus cluster on this machine for `make test-citus`: a coordinator and two workers, each a
# cluster of scripts/postgres.sh (.data/postgres-citus-*) with citus preloaded.
#
#   scripts/citus.sh available   exit 0 if the citus extension is installed for PostgreSQL 15
#   scripts/citus.sh install     install it from ../shared/citus (install.sh, root) unless it is
#                                there; exit 0 if it is there after. Under CI (CI=true) a failure
#                                fails; elsewhere it says the cluster suite will be skipped
#   scripts/citus.sh start       start the three, create the extension in each one's database,
#                                and register the coordinator and the workers
#   scripts/citus.sh fresh NAME  the database NAME made afresh on every node, as start prepares
#                                the project's own (for `make test-citus`)
#   scripts/citus.sh stop        stop the three
#   scripts/citus.sh stop-node NAME, start-node NAME
#                                one node alone (CitusOutageTests stops a worker under a running server)
#   scripts/citus.sh add-worker NAME DATABASE
#                                a further worker (.data/postgres-citus-NAME) started, DATABASE made
#                                afresh on it, and registered in the coordinator's DATABASE; its
#                                shards come with a rebalance (CitusRebalanceTests)
#   scripts/citus.sh psql NODE DATABASE ARGS…
#                                psql on one node as the superuser (scripts/pitr.sh)
#   scripts/citus.sh env         the coordinator's variables, as `scripts/postgres.sh env` prints
#
# Every node runs with wal_level = logical: a rebalance moves shards by logical replication,
# which keeps them writable while they move.
#
# Citus is not among Debian's packages, and this project neither ships nor builds it: install
# Citus Data's own packages for PostgreSQL 15 (docs/cluster.md).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
nodes=(coordinator worker1 worker2)
# CITUS_CLUSTER names a second cluster of three (.data/postgres-CITUS_CLUSTER-*): scripts/pitr.sh's.
cluster_name=${CITUS_CLUSTER:-citus}

log() { echo "citus.sh: $*" >&2; }

# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"

node() {
    local name=$1
    shift
    # Each node keeps its own port (its port file): a caller's PGPORT, such as the
    # coordinator's from `scripts/citus.sh env`, would move the node there.
    env -u PGPORT DIARY_PG_CLUSTER="$root/.data/postgres-$cluster_name-$name" DIARY_PG_PRELOAD=citus DIARY_PG_WAL_LEVEL=logical "$root/scripts/postgres.sh" "$@"
}

# node_psql NODE DATABASE psql-arguments…
node_psql() {
    local name=$1 database=$2
    shift 2
    (eval "$(node "$name" env)" && psql -X -q -At -v ON_ERROR_STOP=1 -U postgres -d "$database" "$@")
}

node_port() { cat "$root/.data/postgres-$cluster_name-$1/port"; }

installer="$root/../shared/citus/install.sh"

# Installed, and, where ../shared/citus is at hand, loadable into this PostgreSQL: files left by
# an install into an older release than the one Citus was built for are not enough.
available() {
    local sharedir
    sharedir=$(/usr/lib/postgresql/15/bin/pg_config --sharedir 2>/dev/null) || return 1
    [ -f "$sharedir/extension/citus.control" ] || return 1
    [ ! -f "$installer" ] || bash "$installer" --check >/dev/null 2>&1
}

# prepare DATABASE [fresh]: the database on every node (dropped and made again with `fresh`),
# the extension in each, and the coordinator and the workers registered in it.
prepare() {
    local database=$1 fresh=${2:-} name
    for name in "${nodes[@]}"; do
        if [ -n "$fresh" ]; then
            node_psql "$name" postgres -c "drop database if exists $database with (force)" -c "create database $database owner diary_owner"
        fi
        node_psql "$name" "$database" -c "create extension if not exists citus"
    done
    node_psql coordinator "$database" -c "select citus_set_coordinator_host('127.0.0.1', $(node_port coordinator))" >/dev/null
    for name in worker1 worker2; do
        node_psql coordinator "$database" -c "select citus_add_node('127.0.0.1', $(node_port "$name"))
            where not exists (select from pg_dist_node where nodeport = $(node_port "$name"))" >/dev/null
    done
}

# Before any cluster starts: install.sh may bring Debian's PostgreSQL 15 to the release Citus was
# built against, and a server that kept running on the old binary then cannot load plpgsql.so
# ("undefined symbol"). So the project's running clusters are stopped once it installed anything.
# The prebuilt Citus loads only into the PostgreSQL 15 release it was built against, and its
# source build needs that release's headers, so Debian's PostgreSQL 15 is brought to the current
# release first, with fresh package lists: a new machine may have an older one and no lists.
install() {
    available && return 0
    if [ -f "$installer" ] && apt_install postgresql-15 && bash "$installer" && available; then
        local cluster
        for cluster in "$root"/.data/postgres*/; do
            [ -f "$cluster/data/postmaster.pid" ] && DIARY_PG_CLUSTER="${cluster%/}" "$root/scripts/postgres.sh" stop
        done
        return 0
    fi
    if [ "${CI:-}" = true ]; then
        log "Citus could not be installed from $installer, and CI runs the cluster suite: failing"
        return 1
    fi
    log "Citus is not installed and could not be from $installer: make test will skip the cluster suite (scripts/test-citus.sh)"
    return 0
}

start() {
    if ! available; then
        log "the citus extension is not installed for PostgreSQL 15; install Citus Data's packages"
        exit 3
    fi
    local name
    for name in "${nodes[@]}"; do
        node "$name" start
    done
    prepare diary
    log "coordinator on $(node_port coordinator), workers on $(node_port worker1) and $(node_port worker2)"
}

stop() {
    local cluster
    for cluster in "$root"/.data/postgres-"$cluster_name"-*/; do
        [ -d "$cluster" ] && node "$(basename "$cluster" | sed "s/^postgres-$cluster_name-//")" stop
    done
    return 0
}

add_worker() {
    local name=$1 database=$2
    node "$name" start
    if [ -n "$(node_psql coordinator "$database" -c "select 1 from pg_dist_node where nodeport = $(node_port "$name")")" ]; then
        log "$name is in $database's cluster already"
        return 0
    fi
    node_psql "$name" postgres -c "drop database if exists $database with (force)" -c "create database $database owner diary_owner"
    node_psql "$name" "$database" -c "create extension if not exists citus"
    node_psql coordinator "$database" -c "select citus_add_node('127.0.0.1', $(node_port "$name"))
        where not exists (select from pg_dist_node where nodeport = $(node_port "$name"))" >/dev/null
    log "$name on $(node_port "$name") joined $database's cluster"
}

case "${1:-}" in
    available) available ;;
    install) install ;;
    start) start ;;
    fresh) prepare "${2:?usage: $0 fresh DATABASE}" fresh ;;
    stop) stop ;;
    stop-node) node "${2:?usage: $0 stop-node NAME}" stop ;;
    start-node) node "${2:?usage: $0 start-node NAME}" start ;;
    add-worker) add_worker "${2:?usage: $0 add-worker NAME DATABASE}" "${3:?usage: $0 add-worker NAME DATABASE}" ;;
    psql) shift; node_psql "${1:?usage: $0 psql NODE DATABASE ARGS…}" "${2:?usage: $0 psql NODE DATABASE ARGS…}" "${@:3}" ;;
    env) node coordinator env ;;
    *) echo "usage: $0 available|install|start|fresh DATABASE|stop|stop-node NAME|start-node NAME|add-worker NAME DATABASE|psql NODE DATABASE ARGS…|env" >&2; exit 2 ;;
esac
