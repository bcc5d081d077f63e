// swift-tools-version:6.0
import PackageDescription

/// `make fuzz` sets DIARY_FUZZ=1 (with its own scratch path) to add one libFuzzer entry point per
/// parser, Fuzz/Targets/<name>; every other build leaves them out, as libFuzzer brings its own `main`.
let fuzzTargetNames = ["jpeg", "png", "webp", "json", "cursor", "headers", "revenuecat", "apple", "zip", "websocket", "query"]
let buildsFuzzTargets = Context.environment["DIARY_FUZZ"] == "1"

/// Every target: imports are internal unless spelled `public import` (or `package import`),
/// and a member is visible only where its module is imported, so the compiler checks the layers.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "diary-server",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "diary-server", targets: ["DiaryServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // Child processes (pg_dump, pg_restore) without Foundation's Process (ExternalTool says why).
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The generic libpq client: no app error codes, no request bodies.
        .target(
            name: "PostgresClient",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Apple Push Notification service: HTTP/2 requests and provider tokens. No domain knowledge.
        .target(
            name: "APNSClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Sign in with Apple's REST API: keys, code exchange, revocation. No domain knowledge.
        .target(
            name: "AppleIDClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // An S3-compatible bucket: requests and Signature Version 4. No domain knowledge.
        .target(
            name: "S3Client",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The API's Codable types, with no server dependencies.
        .target(name: "DiaryModels", swiftSettings: swiftSettings),
        // The domain: policies, request scope, repositories, domain errors. Knows no HTTP.
        .target(
            name: "DiaryCore",
            dependencies: [
                "APNSClient",
                "AppleIDClient",
                "DiaryModels",
                "PostgresClient",
                "S3Client",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // Routes, contexts, middleware, and the one table from errors to problem+json.
        .target(
            name: "DiaryHTTP",
            dependencies: [
                "APNSClient",
                "AppleIDClient",
                "DiaryCore",
                "DiaryModels",
                "PostgresClient",
                "S3Client",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The executable: commands, configuration read once from the environment, wiring.
        .executableTarget(
            name: "DiaryServer",
            dependencies: [
                "APNSClient",
                "AppleIDClient",
                "DiaryCore",
                "DiaryHTTP",
                "DiaryModels",
                "PostgresClient",
                "S3Client",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "client-benchmark",
            dependencies: [
                "PostgresClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ClientBenchmark"
        ),
        .executableTarget(
            name: "realtime-benchmark",
            dependencies: [
                "PostgresClient",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Benchmarks/RealtimeBenchmark"
        ),
        // Benchmarks/push.sh: notifications end to end against the APNs stand-in.
        .executableTarget(
            name: "push-benchmark",
            dependencies: [
                "APNSTestServer",
                "PostgresClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/PushBenchmark"
        ),
        .executableTarget(
            name: "bare-hummingbird",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")],
            path: "Benchmarks/BareHummingbird"
        ),
        // The fuzzing properties, one function per parser (the README, "Fuzzing and sanitizers"): the libFuzzer entry
        // points trap when one fails, and FuzzCorpusReplayTests replays the corpora through them.
        .target(
            name: "FuzzProperties",
            dependencies: [
                "DiaryCore",
                "DiaryHTTP",
                "DiaryModels",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Fuzz/Properties",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "S3ClientTests",
            dependencies: ["S3Client", "TestSupport", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "TestSupport"]
        ),
        // What needs no database, no server and no service: the sources' own rules, settings,
        // encoders, cursors. `make test-unit` runs it alone, in seconds.
        .testTarget(
            name: "DiaryUnitTests",
            dependencies: ["DiaryServer", "DiaryHTTP", "DiaryCore", "TestSupport"]
        ),
        .testTarget(
            name: "DiaryServerTests",
            dependencies: [
                "DiaryServer",
                "DiaryHTTP",
                "DiaryCore",
                "FuzzProperties",
                "S3Client",
                "TestSupport",
                "APNSTestServer",
                "AppleTestServer",
                "AppleIDClient",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            // Read from the source tree by path (JoinDiaryTests), not bundled.
            exclude: ["Fixtures"]
        ),
        .target(
            name: "TestSupport",
            dependencies: ["PostgresClient", "S3Client"],
            path: "Tests/TestSupport"
        ),
        // TLS + ALPN h2 + HTTP/2 plumbing shared by the Apple stand-ins.
        .target(
            name: "StandInSupport",
            dependencies: [
                "TestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/StandInSupport"
        ),
        // The APNs stand-in (validating as Apple does): for the tests and Benchmarks/PushBenchmark.
        .target(
            name: "APNSTestServer",
            dependencies: [
                "StandInSupport",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/APNSTestServer"
        ),
        // The Sign in with Apple stand-in (appleid.apple.com: keys, token, revoke).
        .target(
            name: "AppleTestServer",
            dependencies: [
                "StandInSupport",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/AppleTestServer"
        ),
    ]
)

if buildsFuzzTargets {
    package.targets.append(.target(name: "LibFuzzerDriver", path: "Fuzz/Driver"))
    package.targets += fuzzTargetNames.map { name in
        .executableTarget(
            name: "fuzz-\(name)",
            dependencies: ["FuzzProperties", "LibFuzzerDriver"],
            path: "Fuzz/Targets/\(name)",
            // The entry point is `fuzz_<name>_main`, written by hand: the module must not define one.
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    }
}
