#!/usr/bin/env bash
# Holds the live server to openapi.yaml with schemathesis (from PyPI): a fresh database,
# a server with dev sign-in, two users with a diary each, a fixed seed and a bounded
# number of examples. Run by `make test` after `swift test`; needs the project's
# Postgres and its environment (PGHOST, PGPORT), as `make test` sets them. All checks run,
# the multi-user object_level_authorization among them.
#
# SCHEMATHESIS_CITUS=1 runs the same against a Citus coordinator (scripts/test-citus.sh, with
# PGHOST and PGPORT from `scripts/citus.sh env`): the database made afresh on every node,
# `migrate --citus`, and the server with DB_CITUS=1, so every route meets the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
examples=${SCHEMATHESIS_EXAMPLES:-25}
citus=${SCHEMATHESIS_CITUS:-0}

if ! command -v schemathesis >/dev/null 2>&1; then
    python3 -m pip install --quiet --disable-pip-version-check schemathesis >&2
fi

bin="$(swift build --show-bin-path)/diary-server"
[ -x "$bin" ] || swift build --product diary-server >&2
work=$(mktemp -d)
admin=(psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres)
migrate=(migrate)
if [ "$citus" = 1 ]; then
    # One name, made afresh on every node by each run (and left for the next to drop).
    db=contract_citus
    scripts/citus.sh fresh "$db"
    migrate=(migrate --citus)
    export DB_CITUS=1
else
    db="contract_$$"
    "${admin[@]}" -c "create database $db owner diary_owner"
fi
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    [ "$citus" = 1 ] || "${admin[@]}" -c "drop database if exists $db with (force)" || true
    rm -rf "$work"
}
trap cleanup EXIT

# As in production: migrated by the owner, served as diary_app, under row-level security.
export MIGRATION_DATABASE_URL="postgres://diary_owner@localhost:$PGPORT/$db?host=$PGHOST"
export DATABASE_URL="postgres://diary_app@localhost:$PGPORT/$db?host=$PGHOST"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" "${migrate[@]}" >/dev/null
REVENUECAT_WEBHOOK_AUTH="contract-webhook-secret-$$" DIARY_DEV_AUTH=1 DIARY_DATA_DIR="$work" PORT=$port LOG_LEVEL=warning "$bin" serve 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done

token() {
    curl -fs -X POST "http://127.0.0.1:$port/v1/auth/dev" -H 'content-type: application/json' -d "{\"name\":\"$1\"}" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])' \
        || { echo "dev sign-in of $1 failed; server log:" >&2; tail -20 "$work/server.log" >&2; exit 1; }
}
alice=$(token alice)
bob=$(token bob)
for t in "$alice" "$bob"; do
    curl -fs -X POST "http://127.0.0.1:$port/v1/diaries" -H "authorization: Bearer $t" -H 'content-type: application/json' \
        -d '{"name":"contract","type":"family"}' >/dev/null
done

# Two identities as Web Fuzzing Commons users, declared peers: schemathesis replays each
# one's successful reads as the other (object_level_authorization) and expects nothing shared.
cat > "$work/auth.json" <<JSON
{"auth": [
  {"name": "alice", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $alice"}]},
  {"name": "bob", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $bob"}]}
]}
JSON
# A request schemathesis made invalid may also be refused as too large (413): the server reads
# no body over its limit, valid or not, before it looks at what is inside.
cat > "$work/schemathesis.toml" <<TOML
[auth.wfc]
path = "$work/auth.json"
peers = ["alice", "bob"]

[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5xx"]
TOML

status=0
schemathesis --config-file "$work/schemathesis.toml" run openapi.yaml --url "http://127.0.0.1:$port" \
    --checks all --exclude-checks positive_data_acceptance \
    --exclude-path /v1/me --exclude-path /v1/auth/logout \
    --seed 20261122 --max-examples "$examples" --generation-deterministic \
    --no-color --warnings off --request-timeout 10 || status=$?
if grep -q "unexpected error" "$work/server.log"; then
    echo "server logged unexpected errors:" >&2
    grep "unexpected error" "$work/server.log" | head -5 >&2
    status=1
fi
exit $status
