#!/usr/bin/env bash
# A step of make test: DiaryKit added by URL, as an app adds it. Produces the repository
# (scripts/diarykit-repo.sh), makes a new consumer package whose dependency is the line in
# Clients/DiaryKit/README.md's "Adding DiaryKit" block with the URL pointed at that repository
# (file://), builds it, and checks its Package.resolved holds no package only the server needs.
# Before that, scripts/diarykit-api.sh check: the public API is the one recorded for VERSION.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Its public API first: as recorded for VERSION, and in DiaryKit's own types only.
"$root/scripts/diarykit-api.sh" check
work=$(mktemp -d /tmp/diarykit-consumer-XXXX)
trap 'rm -rf "$work"' EXIT
"$root/scripts/diarykit-repo.sh" "$work/DiaryKit"
version=$(tr -d '[:space:]' < "$root/Clients/DiaryKit/VERSION")

readme="$root/Clients/DiaryKit/README.md"
block=$(sed -n '/<!-- adding-diarykit -->/,/<!-- \/adding-diarykit -->/p' "$readme")
dependency=$(grep -m1 -o '\.package(url: "[^"]*", from: "[^"]*")' <<<"$block") \
    || { echo "test-diarykit-repo: no .package(url:…, from:…) line in README.md's adding-diarykit block" >&2; exit 1; }
product=$(grep -m1 -o '\.product(name: "DiaryKit", package: "DiaryKit")' <<<"$block") \
    || { echo "test-diarykit-repo: no .product(name: \"DiaryKit\", …) line in the block" >&2; exit 1; }
grep -q "from: \"$version\"" <<<"$dependency" \
    || { echo "test-diarykit-repo: the README adds $dependency, but VERSION is $version" >&2; exit 1; }
local_dependency=$(sed -E "s|url: \"[^\"]*\"|url: \"file://$work/DiaryKit\"|" <<<"$dependency")

mkdir -p "$work/App/Sources/App"
cat > "$work/App/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "App",
    platforms: [.iOS(.v16), .macOS(.v13)],
    dependencies: [
        $local_dependency,
    ],
    targets: [
        .executableTarget(name: "App", dependencies: [
            $product,
        ]),
    ]
)
SWIFT
cat > "$work/App/Sources/App/main.swift" <<'SWIFT'
import DiaryKit
import Foundation

// What an app's first lines touch: a client over the default transports, and the queue.
let client = DiaryClient(configuration: .init(serverURL: URL(string: "http://127.0.0.1:9")!, appVersion: "1.0"))
let queue = EntryQueue(client: client, store: InMemoryEntryQueueStore())
// DiaryKit's own types, with no import of the generated layer.
let kind: DiaryType = .couple
print("signed in: \(await client.isSignedIn), drafts: \(try await queue.pending().count), \(kind.rawValue)")
SWIFT
start=$(date +%s)
(cd "$work/App" && swift build >&2)
(cd "$work/App" && swift run -q App)
echo "test-diarykit-repo: the consumer built in $(( $(date +%s) - start )) s"

resolved=$(python3 -c 'import json,sys; print("\n".join(sorted(p["identity"] for p in json.load(open(sys.argv[1]))["pins"])))' "$work/App/Package.resolved")
echo "test-diarykit-repo: the consumer resolved:"; sed 's/^/  /' <<<"$resolved"
failed=0
for forbidden in hummingbird hummingbird-websocket jwt-kit swift-prometheus swift-service-lifecycle \
                 swift-argument-parser swift-subprocess diary-server swift-websocket async-http-client; do
    if grep -qx "$forbidden" <<<"$resolved"; then echo "test-diarykit-repo: the consumer resolved $forbidden" >&2; failed=1; fi
done
exit $failed
