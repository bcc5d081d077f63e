import Foundation
import Testing

/// What the package promises an app that adds it: the contract it is generated from is the
/// repository's, and nothing of the server's graph comes with it.
@Suite("The package")
struct PackageTests {
    /// Clients/DiaryKit, from Tests/DiaryKitTests/PackageTests.swift.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test("the document the plugin generates from is the repository's openapi.yaml, byte for byte")
    func contractInStep() throws {
        let generatedFrom = try Data(contentsOf: Self.packageRoot.appendingPathComponent("Sources/DiaryAPI/openapi.yaml"))
        let repository = Self.packageRoot.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("openapi.yaml")
        // Once the package lives in a repository of its own, its copy is the contract.
        try #require(FileManager.default.fileExists(atPath: repository.path))
        #expect(generatedFrom == (try Data(contentsOf: repository)), "Sources/DiaryAPI/openapi.yaml has drifted from the repository's contract")
    }

    @Test("no server dependency: no Hummingbird, no libpq, no server target, nothing by local path")
    func noServerDependency() throws {
        let manifest = try String(contentsOf: Self.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        for forbidden in ["hummingbird-project/hummingbird.git", "hummingbird-websocket", "DiaryModels", "CLibPQ", "PostgresClient", ".package(path:"] {
            #expect(!manifest.contains(forbidden), "Package.swift names \(forbidden)")
        }
        let resolvedFile = Self.packageRoot.appendingPathComponent("Package.resolved")
        guard let resolved = try? String(contentsOf: resolvedFile, encoding: .utf8) else { return }
        for forbidden in [#""identity" : "hummingbird""#, #""identity" : "hummingbird-websocket""#, #""identity" : "postgres-nio""#] {
            #expect(!resolved.contains(forbidden), "the resolved graph holds \(forbidden)")
        }
    }
}
