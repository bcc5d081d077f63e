#!/usr/bin/env bash
# make test-citus, and the last part of make test: the schema on a real Citus cluster
# (scripts/citus.sh). Without the citus extension it says plainly that it skipped, and fails
# under CI (CI=true), which must run it. Otherwise, on a database made
# afresh on every node: `migrate --citus`, then again (it must change nothing), then the
# tests that need the cluster (CITUS_DATABASE_URL; test plan cluster, Tests/test-plans.txt), some
# of them also through a PgBouncer in front of the coordinator (scripts/pgbouncer.sh, instance citus).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! scripts/citus.sh available; then
    if [ "${CI:-}" = true ]; then
        echo "test-citus: the citus extension is not installed for PostgreSQL 15, and CI runs the cluster suite: failing" >&2
        exit 1
    fi
    echo "test-citus: SKIPPED: the citus extension is not installed for PostgreSQL 15 (scripts/citus.sh install, or Citus Data's packages); nothing run"
    exit 0
fi
# A PGPORT from the caller's environment would put every node on one port.
unset DATABASE_URL MIGRATION_DATABASE_URL TEST_DATABASE_URL PGHOST PGPORT
scripts/citus.sh start
eval "$(scripts/citus.sh env)"
database=diary_citus_test
scripts/citus.sh fresh "$database"

swift build --product diary-server
bin="$(swift build --show-bin-path)/diary-server"
url="postgres://diary_owner@localhost:$PGPORT/$database?host=$PGHOST"
"$bin" migrate --citus --database-url "$url"
second=$("$bin" migrate --citus --database-url "$url")
echo "$second"
grep -q "database is up to date" <<< "$second" && grep -q "layout is up to date" <<< "$second" \
    || { echo "test-citus: a second migrate --citus changed something" >&2; exit 1; }
# A later migration on a cluster laid out already, as an operator's upgrade would run it: the
# release before the newest migration first (every other migration, and sql/definitions as they
# were before the newest migration was committed), then this checkout's files, whose definitions
# then apply again on the laid-out cluster.
upgrade=diary_citus_upgrade
scripts/citus.sh fresh "$upgrade"
upgrade_url="postgres://diary_owner@localhost:$PGPORT/$upgrade?host=$PGHOST"
earlier=$(mktemp -d); trap 'rm -rf "$earlier"' EXIT
mkdir "$earlier/migrations" "$earlier/definitions"
newest=$(ls sql/migrations/*.sql | sort | tail -1)
for file in sql/migrations/*.sql; do [ "$file" = "$newest" ] || cp "$file" "$earlier/migrations/"; done
# The commit before the one that added it: a later commit may have changed the migration
# (before its release), and the definitions of that commit's parent already need it.
before=$(git log --diff-filter=A --format=%H -- "$newest" | tail -1)^
if git cat-file -e "$before:sql/definitions" 2>/dev/null; then
    git archive "$before" sql/definitions | tar -x -C "$earlier/definitions" --strip-components=2
fi
"$bin" migrate --citus --migrations "$earlier/migrations" --database-url "$upgrade_url" >/dev/null
upgraded=$("$bin" migrate --citus --database-url "$upgrade_url")
grep -q "applied $(basename "$newest")" <<< "$upgraded" && grep -q "applied definitions" <<< "$upgraded" \
    || { echo "test-citus: the newest migration and the definitions did not apply to a cluster laid out already: $upgraded" >&2; exit 1; }
echo "test-citus: $(basename "$newest") and sql/definitions apply to a cluster laid out already"

# A PgBouncer in transaction mode in front of the coordinator, for the suite's PgBouncer route.
bouncer() { DIARY_PG_CLUSTER="$root/.data/postgres-citus-coordinator" DIARY_PG_PRELOAD=citus DIARY_DB_NAME=$database scripts/pgbouncer.sh "$@" citus; }
bouncer start
eval "$(bouncer env)"

swift build --build-tests
CITUS_DATABASE_URL="postgres://diary_owner@localhost:$PGPORT/$database?host=$PGHOST" scripts/test-plan.sh cluster

# Every route of openapi.yaml against a server on the coordinator, as make test runs it on one
# PostgreSQL (Tests/contract/schemathesis.sh): no 5xx, nothing shared between the two users.
SCHEMATHESIS_CITUS=1 Tests/contract/schemathesis.sh

# Last, since it stops a worker under a running server: CitusOutageTests.
CITUS_OUTAGE_DATABASE_URL="postgres://diary_owner@localhost:$PGPORT/$database?host=$PGHOST" scripts/test-plan.sh cluster-outage

# Then a third worker joins the running cluster and `diary-server rebalance` spreads the shards
# while two servers take posts and reads: CitusRebalanceTests, after everything else, since the
# layout stays changed.
CITUS_REBALANCE_DATABASE_URL="postgres://postgres@localhost:$PGPORT/$database?host=$PGHOST" scripts/test-plan.sh cluster-rebalance

# Last, a whole cluster restored to one moment: scripts/pitr.sh's three nodes of their own, each
# archiving its WAL with pgBackRest; CitusRestoreTests takes their base backups, a restore point
# on all of them, and restores every node to it. Then those nodes stop.
scripts/pitr.sh start diary_pitr_test
(
    eval "$(scripts/pitr.sh env)"
    pitr_url="postgres://diary_owner@localhost:$PGPORT/diary_pitr_test?host=$PGHOST"
    "$bin" migrate --citus --database-url "$pitr_url" >/dev/null
    CITUS_PITR_DATABASE_URL="$pitr_url" scripts/test-plan.sh cluster-restore
)
scripts/pitr.sh stop
