#!/usr/bin/env bash
# make diarykit-repo [DIARYKIT_REPO=dir]: the repository an app adds DiaryKit from, produced
# from Clients/DiaryKit. Its root is the package; the contract (openapi.yaml) is a file of its
# own; the code swift-openapi-generator's plugin makes from it here is committed there, so an
# app resolves neither the generator nor what the generator needs (swift-argument-parser,
# OpenAPIKit, Yams); its tests, README and CHANGELOG come along; one commit, tagged with VERSION.
# Usage: scripts/diarykit-repo.sh OUTPUT_DIR (replaced if it exists).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/diarykit-repo.sh OUTPUT_DIR}
package="$root/Clients/DiaryKit"
version=$(tr -d '[:space:]' < "$package/VERSION")
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "diarykit-repo: VERSION holds '$version', not MAJOR.MINOR.PATCH" >&2; exit 1; }
grep -q "^## $version\$" "$package/CHANGELOG.md" \
    || { echo "diarykit-repo: CHANGELOG.md has no '## $version' section" >&2; exit 1; }

# The plugin's output for the DiaryAPI target, from the contract as it is now.
swift build --package-path "$package" --target DiaryAPI >&2
generated=$(find "$package/.build/plugins/outputs" -path '*DiaryAPI/destination/OpenAPIGenerator/GeneratedSources' -type d | head -1)
[ -n "$generated" ] && [ -f "$generated/Types.swift" ] || { echo "diarykit-repo: no generated sources under $package/.build/plugins" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/Sources/DiaryAPI"
cp -R "$package/Sources/DiaryKit" "$out/Sources/DiaryKit"
cp -R "$package/Tests" "$out/Tests"
cp "$package/README.md" "$package/CHANGELOG.md" "$package/VERSION" "$out/"
cp "$root/openapi.yaml" "$out/openapi.yaml"
cp "$package/Sources/DiaryAPI/openapi-generator-config.yaml" "$out/openapi-generator-config.yaml"
cp "$generated/Types.swift" "$generated/Client.swift" "$out/Sources/DiaryAPI/"
for file in "$generated"/Types+*.swift; do [ -e "$file" ] && cp "$file" "$out/Sources/DiaryAPI/"; done
cat > "$out/Sources/DiaryAPI/DiaryAPI.swift" <<'SWIFT'
// The generated layer: `Client`, `Components` and `Operations`, made by swift-openapi-generator
// from openapi.yaml (at this repository's root) with openapi-generator-config.yaml, and
// committed: apps build it without the generator. Regenerate by producing the repository again.
SWIFT
# The manifest without the generator and its plugin; everything else as in Clients/DiaryKit.
python3 - "$package/Package.swift" "$out/Package.swift" <<'PY'
import re, sys
manifest = open(sys.argv[1]).read()
manifest = re.sub(r'\n *\.package\(url: "https://github.com/apple/swift-openapi-generator.git"[^\n]*', '', manifest)
manifest = re.sub(r',\n *plugins: \[\.plugin\(name: "OpenAPIGenerator"[^\n]*\]', '', manifest)
assert "OpenAPIGenerator" not in manifest and "swift-openapi-generator" not in manifest, "the generator is still named"
open(sys.argv[2], "w").write(manifest)
PY
printf '.build/\n.swiftpm/\nPackage.resolved\n' > "$out/.gitignore"

git -C "$out" init -q -b main
git -C "$out" add -A
git -C "$out" -c user.name="diarykit-repo" -c user.email="diarykit-repo@localhost" \
    commit -q -m "DiaryKit $version, from diary-server $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$out" tag "$version"
echo "diarykit-repo: $out at $version"
