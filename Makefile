# The two set-up commands: `make run` and `make test`. Both create and start a
# project-local PostgreSQL 15 (scripts/postgres.sh) before they build.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PG := scripts/postgres.sh
# `make run CONFIG=release` for an optimised server.
CONFIG ?= debug

.PHONY: run test build db db-stop psql schema bench bench-client bench-rls bench-rls-instructions clean-db

run: db
	swift build -c $(CONFIG) --product diary-server
	eval "$$($(PG) env)"; \
	bin="$$(swift build -c $(CONFIG) --show-bin-path)/diary-server"; \
	"$$bin" migrate; \
	export DIARY_DEV_AUTH="$${DIARY_DEV_AUTH:-1}"; \
	exec "$$bin" serve

# The fault tests assert latencies (503 within 1 s, …), so they run after the rest, one at a time.
test: db
	eval "$$($(PG) env)"; swift build --product diary-server; \
	swift test --skip FaultTests; \
	swift test --skip-build --filter FaultTests --no-parallel; \
	Tests/sql/run-pgtap.sh; Tests/contract/schemathesis.sh

build:
	swift build

db:
	$(PG) start

db-stop:
	$(PG) stop

psql: db
	eval "$$($(PG) env)"; psql -X "$$DATABASE_URL"

# sql/schema.sql, the schema sql/migrations build, for reading; SchemaFileTests fails when it is stale.
schema: db
	eval "$$($(PG) env)"; scripts/schema.sh write

bench: db
	eval "$$($(PG) env)"; Benchmarks/endpoints.sh

bench-client: db
	eval "$$($(PG) env)"; Benchmarks/client-vs-pgbench.sh

bench-rls: db
	eval "$$($(PG) env)"; Benchmarks/rls-overhead.sh

# Its own cluster: `postgres --single` under callgrind needs a data folder to itself.
bench-rls-instructions:
	Benchmarks/rls-instructions.sh

clean-db: db-stop
	rm -rf .data/postgres
