# The two set-up commands: `make run` and `make test`. Both create and start a
# project-local PostgreSQL 15 (scripts/postgres.sh) before they build.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PG := scripts/postgres.sh
BOUNCER := scripts/pgbouncer.sh
# `make run CONFIG=release` for an optimised server.
CONFIG ?= debug

.PHONY: run test test-unit refusals test-services test-asan test-tsan test-citus test-fanout-property test-previous-release diarykit-repo fuzz fuzz-merge build db db-stop psql schema bench bench-growth bench-realtime bench-push bench-photos bench-export bench-client bench-rls bench-rls-instructions clean-db

run: db
	swift build -c $(CONFIG) --product diary-server
	eval "$$($(PG) env)"; \
	bin="$$(swift build -c $(CONFIG) --show-bin-path)/diary-server"; \
	"$$bin" migrate; \
	export DIARY_DEV_AUTH="$${DIARY_DEV_AUTH:-1}"; \
	exec "$$bin" serve

# The suites run by test plan (Tests/test-plans.txt, scripts/test-plan.sh): main, then the servers
# as subprocesses, then the fault tests, which assert latencies, one at a time.
# Some suites also run through a PgBouncer in transaction mode (scripts/pgbouncer.sh), and the
# S3 store's against moto's S3 server (scripts/moto.sh).
# The tests have a cluster of their own, beside make run's, with fsync off: every test creates
# and drops a database, each DROP DATABASE waits for a checkpoint, and with fsync on those
# checkpoints held connections past their timeout (Benchmarks/results/test-database-strategy-20261128.txt).
TEST_CLUSTER := $(CURDIR)/.data/postgres-test
TEST_TARGETS := test test-services test-asan test-tsan test-previous-release test-fanout-property
$(TEST_TARGETS): export DIARY_PG_CLUSTER = $(TEST_CLUSTER)
$(TEST_TARGETS): export DIARY_PG_FSYNC = off
# Every suite runs at once, each server with its own pools: more than a thousand connections at peak.
$(TEST_TARGETS): export DIARY_PG_MAX_CONNECTIONS = 3000
# Swift Testing starts every test at once unless told otherwise: a thousand processes (servers,
# backends) on two cores. Sixteen at a time take as long, with a third of the processes and half
# the memory (Benchmarks/results/test-parallelism-20261129.txt), so one stall reaches fewer tests.
$(TEST_TARGETS): export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH = 16
# The suites' servers, pools and sockets share one test process: far more than the 1,024 open
# files a shell often allows (EMFILE then fails every connection at once), so the limit is
# raised first, to 65,536 where that is allowed (root), else to the hard limit; PgBouncer's
# clients count against it too.
RAISE_OPEN_FILES := { ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; }
# What the suites need: the tests' cluster, a PgBouncer, the ZIP readers and browser, moto.
# PGPORT names make run's cluster; the tests' takes the next free port.
# Citus first (scripts/citus.sh install): installing it may upgrade PostgreSQL under a running server.
test-services:
	scripts/citus.sh install
	$(RAISE_OPEN_FILES); unset PGPORT; $(PG) start; $(BOUNCER) start test
	scripts/test-tools.sh install
	scripts/moto.sh start
# A recipe's shell, ready for the suites: the open-file limit raised, and pointed at
# test-services' servers. The subprocess suites run .build's diary-server, which it builds.
TEST_SHELL = $(RAISE_OPEN_FILES); \
	eval "$$($(PG) env)"; eval "$$($(BOUNCER) env test)"; eval "$$(scripts/moto.sh env)"; swift build --product diary-server

# `swift test` includes FuzzCorpusReplayTests: every Fuzz/Corpus file once through its fuzz
# target's properties, and Python's zipfile reading back the ZIP corpus's archives (under a second).
# Then DiaryKit (Clients/DiaryKit, a package of its own): built, then tested against the
# diary-server binary built above, each test with its own server and database on this cluster.
# Then DiaryKit as an app adds it: its repository produced (make diarykit-repo), added by URL
# to a new consumer package as its README says, built, and the consumer's resolved packages
# checked for any that only the server needs (scripts/test-diarykit-repo.sh).
# Then the release still serving (releases/previous), built in .build-previous, against this
# checkout's schema beside this checkout's server (scripts/test-previous-release.sh).
# Last, the cluster suite on a Citus coordinator and two workers (scripts/test-citus.sh), which
# says when it skipped, and under CI fails instead.
# Each plan runs under scripts/run-suite.sh: a plan still running after its minutes is stopped,
# naming the tests it had not finished, so a hang fails the run in minutes, not at CI's limit.
# `sync` between the build and the suites: linking the test binary leaves gigabytes of dirty
# pages, and while the kernel writes them back, the tests' cluster waits on the disk for its
# own writes, and connections timed out (Benchmarks/results/test-start-writeback-20261128.txt).
test: test-services
	$(TEST_SHELL); \
	swift build --build-tests; sync; \
	scripts/test-plan.sh main; \
	scripts/test-plan.sh subprocesses; \
	scripts/test-plan.sh one-at-a-time; \
	Tests/sql/run-pgtap.sh; Tests/contract/schemathesis.sh; \
	DIARYKIT_SERVER_BINARY="$$(swift build --show-bin-path)/diary-server" scripts/run-suite.sh 20 swift test --package-path Clients/DiaryKit; \
	scripts/test-diarykit-repo.sh; \
	scripts/test-previous-release.sh; \
	scripts/test-citus.sh

# The tests that need no database, server or service (Tests/DiaryUnitTests): the sources' own
# rules, settings, encoders and cursors, chosen by their target; make test runs them too.
test-unit:
	swift build --build-tests
	swift test --skip-build --filter DiaryUnitTests

# The Swift suites under AddressSanitizer (in .build-asan) and ThreadSanitizer (in .build-tsan);
# not in CI: each is a build of its own and a slower run (Benchmarks/results/sanitizers-*.txt).
# They run test plan main (Tests/test-plans.txt): not the suites that assert latencies, nor
# those whose servers are subprocesses running .build's unsanitized binary. Backups, Maintained
# counters, Service status and the Citus schema suite run one-shot commands of that binary too;
# their in-process parts are sanitized. Each suppression is explained in Tests/*-suppressions.txt.
# detect_leaks=0: leaks are not what this run checks, and Foundation's and the runtime's caches
# live until exit.
test-asan: test-services
	$(TEST_SHELL); \
	swift build --build-tests --sanitize=address --scratch-path .build-asan; \
	ASAN_OPTIONS=detect_leaks=0:suppressions=$(CURDIR)/Tests/asan-suppressions.txt \
	scripts/test-plan.sh main --sanitize=address --scratch-path .build-asan

test-tsan: test-services
	$(TEST_SHELL); \
	swift build --build-tests --sanitize=thread --scratch-path .build-tsan; \
	TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/tsan-suppressions.txt \
	scripts/test-plan.sh main --sanitize=thread --scratch-path .build-tsan

# libFuzzer over every parser of untrusted bytes (docs/testing.md), FUZZ_SECONDS (60) each, built
# with AddressSanitizer in .build-fuzz; findings go to Fuzz/findings/<target>/. FUZZ_TARGETS picks some.
FUZZ_TARGETS ?=
fuzz:
	Fuzz/fuzz.sh run $(FUZZ_TARGETS)

# Folds what the runs found into Fuzz/Corpus, minimised with -merge=1.
fuzz-merge:
	Fuzz/fuzz.sh merge $(FUZZ_TARGETS)

# The previous release against this checkout's schema alone, as make test runs it.
# DiaryKit's repository, as an app adds it (scripts/diarykit-repo.sh): DIARYKIT_REPO=dir, by
# default .build/DiaryKit-repo. Publishing it is pushing that repository and its tag.
DIARYKIT_REPO ?= .build/DiaryKit-repo
diarykit-repo:
	scripts/diarykit-repo.sh "$(DIARYKIT_REPO)"

# What is made from refusals.tsv, the one table of refusals (scripts/refusals.py):
# RefusalTableTests fails when it is stale.
refusals:
	scripts/refusals.py

# The fan-out's property test with more seeds and steps than make test's one (FANOUT_SEEDS,
# comma-separated, and FANOUT_STEPS).
FANOUT_SEEDS ?= 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20
FANOUT_STEPS ?= 100
test-fanout-property: test-services
	$(TEST_SHELL); swift build --build-tests; \
	FANOUT_SEEDS=$(FANOUT_SEEDS) FANOUT_STEPS=$(FANOUT_STEPS) swift test --skip-build --filter FanOutPropertyTests

test-previous-release: test-services
	$(TEST_SHELL); swift build --build-tests; scripts/test-previous-release.sh

# The schema on a Citus cluster alone (scripts/test-citus.sh), as make test ends: a coordinator and
# two workers, migrate --citus twice, an upgrade of a laid-out cluster, and CitusClusterTests.
test-citus:
	scripts/test-citus.sh

build:
	swift build

db:
	$(PG) start

db-stop:
	for instance in .data/pgbouncer-*/; do [ -d "$$instance" ] && $(BOUNCER) stop "$$(basename "$$instance" | sed 's/^pgbouncer-//')"; done; true
	$(PG) stop
	DIARY_PG_CLUSTER=$(TEST_CLUSTER) $(PG) stop
	scripts/moto.sh stop
	scripts/citus.sh stop

psql: db
	eval "$$($(PG) env)"; psql -X "$$DATABASE_URL"

# sql/schema.sql, the schema sql/migrations and sql/definitions build, for reading; SchemaFileTests fails when it is stale.
schema: db
	eval "$$($(PG) env)"; scripts/schema.sh write

# The benchmarks: each a script of Benchmarks/ (docs/benchmarks.md says what each measures), run
# against make run's database, that records its figures in Benchmarks/results/. One recipe:
#   bench                   endpoints.sh; VIA_PGBOUNCER=1 through a PgBouncer in transaction mode
#   bench-growth            growth.sh, every everyday endpoint as a diary grows; MODE=busy:
#                           growth-busy.sh, the database filled through the API first
#   bench-rls-instructions  rls-instructions.sh, on a cluster of its own (callgrind)
MODE ?=
BENCH_SCRIPT.bench := endpoints
BENCH_SCRIPT.bench-growth = $(if $(filter busy,$(MODE)),growth-busy,growth)
BENCH_SCRIPT.bench-realtime := realtime
BENCH_SCRIPT.bench-push := push
BENCH_SCRIPT.bench-photos := photos
BENCH_SCRIPT.bench-export := export
BENCH_SCRIPT.bench-client := client-vs-pgbench
BENCH_SCRIPT.bench-rls := rls-overhead
BENCH_SCRIPT.bench-rls-instructions := rls-instructions
# nginx and the ZIP readers, for the benchmarks that compare against them.
BENCH_TOOLS := bench-photos bench-export
BENCHES := bench bench-growth bench-realtime bench-push bench-photos bench-export bench-client bench-rls bench-rls-instructions
$(BENCHES): db
	$(if $(filter $@,$(BENCH_TOOLS)),scripts/test-tools.sh install-bench)
	eval "$$($(PG) env)"; Benchmarks/$(BENCH_SCRIPT.$@).sh

clean-db: db-stop
	rm -rf .data/postgres $(TEST_CLUSTER)
