#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/Targets/<name>) with AddressSanitizer and runs them.
#
#   Fuzz/fuzz.sh run [TARGET…]     fuzz each target for FUZZ_SECONDS (60), one after the other,
#                                   from Fuzz/Corpus/<target>, and print executions, coverage and
#                                   findings per target; exit 1 when any target found something
#   Fuzz/fuzz.sh merge [TARGET…]   minimise Fuzz/Corpus/<target> with what the runs found
#                                   (-merge=1), in place
#   Fuzz/fuzz.sh build [TARGET…]   build only (run and merge build first, unless FUZZ_NO_BUILD=1)
#
# Each input is bounded in time (FUZZ_TIMEOUT seconds, 10) and memory (FUZZ_RSS_MB, 2048): an
# input that costs that much takes an instance down as surely as a crash, and is a finding.
# Findings go to Fuzz/findings/<target>/ (crash-…, timeout-…, oom-…; not committed): fix each,
# give it a regression test, and copy it into Fuzz/Corpus/<target>. Inputs the runs add are kept
# in .build-fuzz/corpus/<target> until `merge` folds them into the committed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(jpeg png webp json cursor headers revenuecat apple zip websocket query)
SCRATCH=.build-fuzz
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-10}
FUZZ_RSS_MB=${FUZZ_RSS_MB:-2048}
# Swift accepts `undefined` only for the C it compiles, and there is none here; `address`
# covers the unsafe pointers and the C libraries' memory.
SANITIZERS=${FUZZ_SANITIZERS:-fuzzer,address}

log() { echo "fuzz.sh: $*" >&2; }

build() {
    local target
    for target in "$@"; do
        DIARY_FUZZ=1 swift build --scratch-path "$SCRATCH" --product "fuzz-$target" \
            -Xswiftc "-sanitize=$SANITIZERS" -Xswiftc -use-ld=lld >&2
    done
}

binary() {
    echo "$(DIARY_FUZZ=1 swift build --scratch-path "$SCRATCH" --show-bin-path)/fuzz-$1"
}

run() {
    local target failed=0 summary=()
    # FUZZ_NO_BUILD=1 runs the binaries as they are, while another build holds the machine.
    [ "${FUZZ_NO_BUILD:-}" = 1 ] || build "$@"
    for target in "$@"; do
        local work="$SCRATCH/corpus/$target" findings="Fuzz/findings/$target" logfile="$SCRATCH/logs/$target.log"
        mkdir -p "$work" "$findings" "$(dirname "$logfile")"
        local before; before=$(find "$findings" -type f | wc -l)
        log "fuzzing $target for ${FUZZ_SECONDS}s"
        # New inputs go to the first folder; the committed corpus is read only.
        set +e
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$(binary "$target")" "$work" "Fuzz/Corpus/$target" \
            -max_total_time="$FUZZ_SECONDS" -timeout="$FUZZ_TIMEOUT" -rss_limit_mb="$FUZZ_RSS_MB" \
            -artifact_prefix="$findings/" -print_final_stats=1 >"$logfile" 2>&1
        local status=$?
        set -e
        local after; after=$(find "$findings" -type f | wc -l)
        local executions; executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logfile" | grep -o '[0-9]*$' || echo "?")
        local last; last=$(grep -E '^#[0-9]+' "$logfile" | tail -1)
        local coverage; coverage=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo "?")
        local features; features=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo "?")
        local corpus; corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' <<<"$last" | cut -d' ' -f2 || echo "?")
        summary+=("$(printf '%-11s executions %-10s edges %-6s features %-7s corpus %-10s findings %s' \
            "$target" "${executions:-?}" "${coverage:-?}" "${features:-?}" "${corpus:-?}" "$((after - before))")")
        if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
            failed=1
            log "$target: exit $status; see $logfile and $findings/"
            grep -E '^(==[0-9]+==ERROR|Fatal error|SUMMARY|.*fuzz-'"$target"':)' "$logfile" | head -5 >&2 || true
        fi
    done
    printf '%s\n' "${summary[@]}"
    return "$failed"
}

merge() {
    local target
    [ "${FUZZ_NO_BUILD:-}" = 1 ] || build "$@"
    for target in "$@"; do
        local minimised="$SCRATCH/merged/$target"
        rm -rf "$minimised"; mkdir -p "$minimised" "$SCRATCH/corpus/$target"
        ASAN_OPTIONS=detect_leaks=0 "$(binary "$target")" -merge=1 -timeout="$FUZZ_TIMEOUT" -rss_limit_mb="$FUZZ_RSS_MB" \
            "$minimised" "Fuzz/Corpus/$target" "$SCRATCH/corpus/$target" >"$SCRATCH/merge-$target.log" 2>&1
        # libFuzzer names what it keeps by SHA-1; the seeds it keeps get their names back.
        local seed sha
        for seed in "Fuzz/Corpus/$target"/*; do
            sha=$(sha1sum "$seed" | cut -c1-40)
            [ -f "$minimised/$sha" ] && mv "$minimised/$sha" "$minimised/$(basename "$seed")"
        done
        local kept; kept=$(ls "$minimised" | wc -l)
        rm -rf "Fuzz/Corpus/$target"; mv "$minimised" "Fuzz/Corpus/$target"
        log "$target: $kept files after -merge=1"
    done
}

command=${1:-run}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
case "$command" in
    run) run "${targets[@]}" ;;
    merge) merge "${targets[@]}" ;;
    build) build "${targets[@]}" ;;
    *) log "unknown command $command (run, merge, build)"; exit 2 ;;
esac
