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

    /// The server's contract, two folders up, when the package sits in the server's repository.
    static var serverContract: URL {
        packageRoot.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("openapi.yaml")
    }

    // In the repository `make diarykit-repo` produces, the contract is a file of its own and
    // the generated code is committed; that repository's producer checks both.
    @Test("the document the plugin generates from is the repository's openapi.yaml, byte for byte",
          .enabled(if: FileManager.default.fileExists(atPath: PackageTests.serverContract.path)))
    func contractInStep() throws {
        let generatedFrom = try Data(contentsOf: Self.packageRoot.appendingPathComponent("Sources/DiaryAPI/openapi.yaml"))
        let repository = Self.serverContract
        #expect(generatedFrom == (try Data(contentsOf: repository)), "Sources/DiaryAPI/openapi.yaml has drifted from the repository's contract")
    }

    /// With InternalImportsByDefault, a public declaration cannot use a type of a module
    /// imported without `public`: so long as no file imports DiaryAPI publicly, the compiler
    /// itself keeps the generated types out of the app's sight (scripts/diarykit-api.sh also
    /// checks the built module's API).
    @Test("the generated layer is imported by no file publicly: the app sees DiaryKit's own types only")
    func generatedLayerStaysInside() throws {
        let sources = Self.packageRoot.appendingPathComponent("Sources/DiaryKit")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("public import DiaryAPI") && !text.contains("@_exported"), "\(file) hands the generated layer to the app")
        }
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
