// swift-tools-version:6.0
import PackageDescription

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
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "PostgresClient",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(name: "DiaryModels"),
        .executableTarget(
            name: "client-benchmark",
            dependencies: [
                "PostgresClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ClientBenchmark"
        ),
        .executableTarget(
            name: "DiaryServer",
            dependencies: [
                "DiaryModels",
                "PostgresClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "TestSupport"]
        ),
        .testTarget(
            name: "DiaryServerTests",
            dependencies: [
                "DiaryServer",
                "TestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            // Read from the source tree by path (JoinDiaryTests), not bundled.
            exclude: ["Fixtures"]
        ),
        .target(
            name: "TestSupport",
            dependencies: ["PostgresClient"],
            path: "Tests/TestSupport"
        ),
    ]
)
