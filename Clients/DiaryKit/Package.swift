// swift-tools-version:6.0
import PackageDescription

/// DiaryKit: the Zutto Nikki app's client for diary-server. It depends on nothing server-side,
/// so it can move to a repository of its own unchanged: an app that adds it resolves the
/// OpenAPI runtime and transports, never Hummingbird or libpq.
///
/// One code path on every platform: URLSession carries the calls (swift-openapi-urlsession)
/// and the realtime socket. The tests alone add swift-websocket's client, for the socket on
/// Linux, whose libcurl here has no WebSocket (README); an app never resolves it.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "DiaryKit",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .library(name: "DiaryKit", targets: ["DiaryKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        // The tests' realtime socket on Linux.
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // The generated layer: types and a client from openapi.yaml (a link to the repository's
        // contract), generated at build time by the plugin and never committed.
        .target(
            name: "DiaryAPI",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        // The hand-written layer the app uses: sessions, typed errors, the offline queue,
        // realtime, photos, push, account and service status.
        .target(
            name: "DiaryKit",
            dependencies: [
                "DiaryAPI",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            swiftSettings: swiftSettings + [.swiftLanguageMode(.v6)]
        ),
        // Against the live server: DIARYKIT_SERVER_BINARY and a PostgreSQL cluster (PGHOST,
        // PGPORT), as `make test` provides them. No server code is imported.
        .testTarget(
            name: "DiaryKitTests",
            dependencies: [
                "DiaryKit",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            swiftSettings: swiftSettings + [.swiftLanguageMode(.v6)]
        ),
    ]
)
