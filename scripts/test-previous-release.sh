#!/usr/bin/env bash
# make test-previous-release, and a step of make test: the release still serving
# (releases/previous) against this checkout's schema, as a deploy runs them together between
# its migration and the last server's replacement. Builds that release from its commit, in
# .build-previous/<commit> (kept: a later run reuses it), then runs PreviousReleaseTests with it.
# Expects test-services' cluster in the environment (make test's TEST_SHELL).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

commit=$(grep -v '^#' releases/previous | grep -m1 -Eo '^[0-9a-f]{40}')
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "test-previous-release: releases/previous names $commit, which this clone does not have (a shallow clone?)" >&2
    exit 1
fi
source_dir="$root/.build-previous/$commit"
binary="$source_dir/.build/debug/diary-server"
if [ ! -x "$binary" ]; then
    rm -rf "$source_dir"
    mkdir -p "$source_dir"
    git archive "$commit" | tar -x -C "$source_dir"
    echo "test-previous-release: building the previous release, ${commit:0:7}"
    (cd "$source_dir" && swift build --product diary-server)
fi
# The link leaves dirty pages the suites would otherwise wait on (see make test).
sync
output=$(mktemp); trap 'rm -f "$output"' EXIT
PREVIOUS_RELEASE_BIN="$binary" PREVIOUS_RELEASE_SOURCE="$source_dir" \
    scripts/test-plan.sh previous-release 2>&1 | tee "$output"
# A suite that did not run must not pass for one that did.
grep -q "Test run with 1 test in 1 suite passed" "$output" \
    || { echo "test-previous-release: PreviousReleaseTests did not run and pass" >&2; exit 1; }
