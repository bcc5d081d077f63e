#!/usr/bin/env bash
# The memory a 10,000-change catch-up holds in DiaryKit: streamed page by page (catchUp), and
# every page gathered first (DiaryKit 1's catchUp). Needs make test-services' cluster; prints
# the figures (Benchmarks/results/diarykit-build-20261128.txt keeps them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
eval "$(scripts/postgres.sh env)"
swift build --product diary-server
swift build --build-tests --package-path Clients/DiaryKit
DIARYKIT_BENCH_CATCHUP=1 DIARYKIT_SERVER_BINARY="$(swift build --show-bin-path)/diary-server" \
    swift test --skip-build --package-path Clients/DiaryKit --filter CatchUpMemoryBenchmark 2>&1 | grep -E -A3 "catchUp of|✘|passed|failed"
