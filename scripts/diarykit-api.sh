#!/usr/bin/env bash
# DiaryKit's public API, as the compiler sees it, kept in Clients/DiaryKit/API.txt beside VERSION.
#   scripts/diarykit-api.sh check    fails when the API differs from API.txt, or names the
#                                    generated layer (DiaryAPI's Components/Operations)
#   scripts/diarykit-api.sh record   rewrites API.txt; refuses when the API changed but VERSION
#                                    did not (a change to the public API bumps the version, and
#                                    scripts/diarykit-repo.sh refuses a version the CHANGELOG lacks)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package="$root/Clients/DiaryKit"
mode=${1:?usage: scripts/diarykit-api.sh check|record}
version=$(tr -d '[:space:]' < "$package/VERSION")
swift build --package-path "$package" --target DiaryKit >&2
modules=$(swift build --package-path "$package" --show-bin-path)/Modules
dump=$(mktemp); listing=$(mktemp); trap 'rm -f "$dump" "$listing"' EXIT
swift-api-digester -dump-sdk -module DiaryKit -I "$modules" -o "$dump" -abort-on-module-fail
# Every public declaration, one per line, by its place in the module: what an app can name.
python3 - "$dump" "$version" > "$listing" <<'PY'
import json, sys
root = json.load(open(sys.argv[1]))["ABIRoot"]
lines = []
# A declaration's children are its signature (the types it uses) and, for a type, its members.
signature_kinds = ("TypeNominal", "TypeFunc", "TypeNameAlias")
def walk(node, path):
    for child in node.get("children", []):
        kind = child.get("kind", "")
        if kind == "Import" or kind in signature_kinds:
            continue
        here = path + [child.get("printedName", child.get("name", ""))]
        signature = "".join(f" {c.get('printedName')}" for c in child.get("children", []) if c.get("kind") in signature_kinds)
        lines.append(f"{'.'.join(here)} [{child.get('declKind', kind)}]{signature}")
        walk(child, here)
walk(root, [])
print(f"# DiaryKit {sys.argv[2]}: its public API (scripts/diarykit-api.sh record)")
for line in sorted(set(lines)):
    print(line)
PY
if grep -Eq 'Components\.|Operations\.|DiaryAPI\.' "$listing"; then
    echo "diarykit-api: the public API names the generated layer:" >&2
    grep -E 'Components\.|Operations\.|DiaryAPI\.' "$listing" | head -20 >&2
    exit 1
fi
recorded="$package/API.txt"
case "$mode" in
check)
    if ! diff -u <(tail -n +2 "$recorded") <(tail -n +2 "$listing") > /dev/null; then
        diff -u <(tail -n +2 "$recorded") <(tail -n +2 "$listing") | head -40 >&2
        echo "diarykit-api: DiaryKit's public API changed: bump Clients/DiaryKit/VERSION, say so in CHANGELOG.md, then run scripts/diarykit-api.sh record" >&2
        exit 1
    fi
    head -1 "$recorded" | grep -q "DiaryKit $version:" \
        || { echo "diarykit-api: API.txt was recorded for another version than $version" >&2; exit 1; }
    echo "diarykit-api: the public API is as recorded for $version ($(($(wc -l < "$listing") - 1)) declarations)" ;;
record)
    if [ -f "$recorded" ] && ! diff -q <(tail -n +2 "$recorded") <(tail -n +2 "$listing") > /dev/null \
        && head -1 "$recorded" | grep -q "DiaryKit $version:"; then
        echo "diarykit-api: the public API changed but VERSION is still $version: bump it and say so in CHANGELOG.md first" >&2
        exit 1
    fi
    cp "$listing" "$recorded"; echo "diarykit-api: recorded $recorded for $version" ;;
*) echo "usage: scripts/diarykit-api.sh check|record" >&2; exit 2 ;;
esac
