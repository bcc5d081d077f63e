#!/usr/bin/env bash
# A Citus cluster restored to one moment, for make test (CitusRestoreTests): three nodes of its
# own (scripts/citus.sh with CITUS_CLUSTER=citus-pitr), each archiving its WAL with pgBackRest
# (Debian's package) under a stanza named after the node, in a repository folder under
# .data/pgbackrest: deploy/pgbackrest.conf's settings, made local.
#
#   scripts/pitr.sh install          pgbackrest from Debian's packages, unless it is there
#   scripts/pitr.sh start DATABASE   the three nodes, archiving; DATABASE made afresh on each and
#                                    the workers registered; each node's stanza created
#   scripts/pitr.sh backup           a full base backup of every node
#   scripts/pitr.sh restore NAME     every node stopped, restored to the restore point NAME
#                                    (`diary-server restore-point`), and started, out of recovery
#   scripts/pitr.sh stop             the three nodes stopped
#   scripts/pitr.sh env              the coordinator's variables, as `scripts/postgres.sh env` prints
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CITUS_CLUSTER=citus-pitr
nodes=(coordinator worker1 worker2)
state="$root/.data/pgbackrest"
config="$state/pgbackrest.conf"

# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"
log() { echo "pitr.sh: $*" >&2; }
citus() { "$root/scripts/citus.sh" "$@"; }
node_dir() { echo "$root/.data/postgres-$CITUS_CLUSTER-$1"; }
# pgBackRest runs as the nodes' owner: it reads their data folders and writes their WAL.
pgbr() { as_owner pgbackrest --config="$config" "$@"; }

install() {
    command -v pgbackrest >/dev/null && return 0
    log "installing pgbackrest"
    apt_install pgbackrest
}

write_config() {
    mkdir -p "$state/repo" "$state/log" "$state/lock" "$state/spool"
    {
        echo "# Written by scripts/pitr.sh from deploy/pgbackrest.conf's settings, for the test cluster."
        echo "[global]"
        echo "repo1-path=$state/repo"
        echo "repo1-retention-full=2"
        echo "log-path=$state/log"
        echo "lock-path=$state/lock"
        echo "spool-path=$state/spool"
        echo "start-fast=y"
        echo "compress-type=none"
        echo "log-level-console=warn"
        local name
        for name in "${nodes[@]}"; do
            echo
            echo "[$name]"
            echo "pg1-path=$(node_dir "$name")/data"
            echo "pg1-port=$(cat "$(node_dir "$name")/port")"
            echo "pg1-socket-path=$(node_dir "$name")/run"
            echo "pg1-user=postgres"
        done
    } > "$config"
    [ "$(id -u)" -ne 0 ] || chown -R "$service_user" "$state"
}

start() {
    local database=$1 name
    install
    citus start
    write_config
    for name in "${nodes[@]}"; do
        if [ "$(citus psql "$name" postgres -c 'show archive_mode')" != on ]; then
            citus psql "$name" postgres -c "alter system set archive_mode = on" \
                -c "alter system set archive_command = 'pgbackrest --config=$config --stanza=$name archive-push %p'"
            citus stop-node "$name" && citus start-node "$name"
        fi
    done
    citus fresh "$database"
    for name in "${nodes[@]}"; do
        pgbr --stanza="$name" stanza-create
        pgbr --stanza="$name" check
    done
    log "three nodes archiving to $state/repo; $database laid out afresh"
}

backup() {
    local name
    for name in "${nodes[@]}"; do pgbr --stanza="$name" --type=full backup; done
    log "a full backup of each node"
}

restore() {
    local point=$1 name
    # Every node's WAL up to now in the repository before any stops: check switches to a new
    # segment and waits until the old one is archived.
    for name in "${nodes[@]}"; do pgbr --stanza="$name" check; done
    for name in "${nodes[@]}"; do citus stop-node "$name"; done
    for name in "${nodes[@]}"; do
        pgbr --stanza="$name" --delta --type=name --target="$point" --target-action=promote restore
    done
    # postgres.sh start returns once the node is out of recovery, at the point, promoted.
    for name in "${nodes[@]}"; do citus start-node "$name"; done
    log "every node restored to $point"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:?usage: $0 start DATABASE}" ;;
    backup) backup ;;
    restore) restore "${2:?usage: $0 restore NAME}" ;;
    stop) citus stop ;;
    env) citus env ;;
    *) echo "usage: $0 install|start DATABASE|backup|restore NAME|stop|env" >&2; exit 2 ;;
esac
