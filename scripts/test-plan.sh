#!/usr/bin/env bash
# Runs one test plan of Tests/test-plans.txt, built already (`swift build --build-tests`), under
# scripts/run-suite.sh's limit for it: its suites, or for main every suite no other plan names.
# Further arguments go to `swift test` (a sanitizer's --sanitize and --scratch-path).
# Usage: scripts/test-plan.sh PLAN [swift test option...]
set -euo pipefail
cd "$(dirname "$0")/.."
plan=${1:?usage: scripts/test-plan.sh PLAN [swift test option...]}
shift
plans=Tests/test-plans.txt
row=$(awk -v plan="$plan" '$1 == plan' "$plans")
[ -n "$row" ] || { echo "test-plan: no plan $plan in $plans" >&2; exit 2; }
read -r _ minutes parallel suites <<< "$row"
[ "$plan" = main ] || [ -n "$suites" ] || { echo "test-plan: plan $plan names no suite" >&2; exit 2; }
# Test IDs read Target.Suite/test: a suite is matched by its whole name.
pattern() { echo "\\.($(echo "$1" | tr -s ' \t' '|'))(/|\$)"; }
if [ "$plan" = main ]; then
    others=$(awk '!/^#/ && NF > 3 { for (i = 4; i <= NF; i++) printf "%s ", $i }' "$plans")
    selection=(--skip "$(pattern "${others% }")")
else
    selection=(--filter "$(pattern "$suites")")
fi
[ "$parallel" = yes ] || selection+=(--no-parallel)
exec scripts/run-suite.sh "$minutes" swift test --skip-build "${selection[@]}" "$@"
