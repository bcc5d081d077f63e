import Foundation
import Testing

/// The layers of docs/ARCHITECTURE.md, held by what each target's files import. SwiftPM lets
/// a target import a module it reaches only through a dependency (DiaryHTTP could import
/// CLibPQ through PostgresClient), so the compiler alone does not hold the line.
@Suite("Layering")
struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")
    static let tests = sources.deletingLastPathComponent().appendingPathComponent("Tests")

    static let system: Set<String> = ["Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Glibc", "Darwin"]

    /// What each target may import, beside the system's modules.
    static let allowed: [String: Set<String>] = [
        "PostgresClient": ["CLibPQ", "Logging", "NIOConcurrencyHelpers", "NIOCore", "NIOPosix", "ServiceLifecycle"],
        "DiaryModels": [],
        "S3Client": ["AsyncHTTPClient", "Crypto", "NIOCore", "NIOHTTP1"],
        "AppleIDClient": ["AsyncHTTPClient", "JWTKit", "NIOCore", "NIOFoundationCompat", "NIOHTTP1"],
        "APNSClient": ["AsyncHTTPClient", "JWTKit", "Logging", "NIOConcurrencyHelpers", "NIOCore", "NIOFoundationCompat", "NIOHTTP1", "NIOSSL"],
        "DiaryCore": ["DiaryModels", "PostgresClient", "APNSClient", "AppleIDClient", "S3Client", "AsyncHTTPClient", "Logging", "Metrics", "NIOConcurrencyHelpers", "NIOCore", "NIOPosix", "_NIOFileSystem", "Crypto", "JWTKit", "CompressNIO", "Subprocess", "SystemPackage"],
        "DiaryHTTP": [
            "APNSClient", "AppleIDClient", "S3Client", "AsyncHTTPClient", "DiaryCore", "DiaryModels", "PostgresClient", "Hummingbird", "HummingbirdCore", "HummingbirdWebSocket",
            "Logging", "Metrics", "Prometheus", "NIOCore", "NIOConcurrencyHelpers", "NIOFoundationEssentialsCompat", "NIOSSL", "NIOWebSocket", "ServiceLifecycle",
            "Crypto",
        ],
        "DiaryServer": ["APNSClient", "AppleIDClient", "S3Client", "DiaryCore", "DiaryHTTP", "DiaryModels", "PostgresClient", "Hummingbird", "ArgumentParser", "Logging", "ServiceLifecycle", "UnixSignals", "Crypto"],
    ]

    @Test("each target imports only the layers beneath it", arguments: ["PostgresClient", "APNSClient", "AppleIDClient", "S3Client", "DiaryModels", "DiaryCore", "DiaryHTTP", "DiaryServer"])
    func importsStayBeneath(target: String) throws {
        let allowed = try #require(Self.allowed[target]).union(Self.system)
        let imports = try Self.imports(of: target)
        #expect(!imports.isEmpty, "no Swift files read for \(target)")
        for (file, module) in imports where !allowed.contains(module) {
            Issue.record("\(file) imports \(module), which \(target) may not")
        }
    }

    @Test("docs/ARCHITECTURE.md's table names every module each target may import", arguments: ["PostgresClient", "APNSClient", "AppleIDClient", "S3Client", "DiaryModels", "DiaryCore", "DiaryHTTP", "DiaryServer"])
    func documentedImportsAgree(target: String) throws {
        let document = try String(contentsOf: Self.sources.deletingLastPathComponent().appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let row = try #require(document.split(separator: "\n").first { $0.hasPrefix("| `\(target)`") }, "no row for \(target)")
        let mayImport = try #require(row.split(separator: "|").last { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
        let named = Set(mayImport.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
        for module in try #require(Self.allowed[target]) where !named.contains(module) {
            Issue.record("\(target) may import \(module), which docs/ARCHITECTURE.md does not name")
        }
        let modules = Set(Self.allowed.values.flatMap { $0 }).union(Self.allowed.keys)
        for word in named where modules.contains(word) && word != target && !(Self.allowed[target] ?? []).contains(word) {
            Issue.record("docs/ARCHITECTURE.md lets \(target) import \(word), which LayeringTests does not")
        }
    }

    /// The target's Swift files, relative to its folder.
    static func swiftFiles(of target: String, under root: URL = sources) -> [String] {
        let folder = root.appendingPathComponent(target)
        return FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
    }

    /// Every `import` of the target's files: (file, module).
    static func imports(of target: String) throws -> [(String, String)] {
        let folder = sources.appendingPathComponent(target)
        let files = swiftFiles(of: target)
        let pattern = /^\s*(?:@testable\s+|@_exported\s+)?(?:public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)/
        return try files.flatMap { file in
            try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n")
                .compactMap { line in line.firstMatch(of: pattern).map { ("\(target)/\(file)", String($0.1)) } }
        }
    }
}
