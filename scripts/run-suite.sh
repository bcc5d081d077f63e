#!/usr/bin/env bash
# Runs one test command with a time limit: a suite that outlives MINUTES is stopped (its whole
# process group, the servers it started among them), and the tests it had started and not
# finished are named, so that a hang costs minutes, not the CI run's 90, and says where it is.
# Usage: scripts/run-suite.sh MINUTES command [argument...]
set -uo pipefail
minutes=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout --kill-after=30s "${minutes}m" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "run-suite: still running after $minutes minutes, so stopped: $*" >&2
    echo "run-suite: the tests it had started and not finished:" >&2
    python3 - "$log" >&2 <<'PYTHON'
import collections, re, sys
started, finished = collections.Counter(), collections.Counter()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if m := re.match(r'^◇ Test "(.*)" started\.$', line):
        started[m.group(1)] += 1
    elif m := re.match(r'^[✔✘] Test "(.*)"(?: with \d+ test cases?)? (?:passed|failed) after ', line):
        finished[m.group(1)] += 1
unfinished = started - finished
for name in sorted(unfinished):
    print(f'  - "{name}"')
if not unfinished:
    print("  (none: it hung outside a test, or printed nothing it could be read by)")
PYTHON
fi
exit "$status"
