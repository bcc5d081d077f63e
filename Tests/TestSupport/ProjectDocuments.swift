import Foundation

/// The README and every page of docs/, by path from the package root: what the doc tests read.
public enum ProjectDocuments {
    public static func pages() throws -> [(path: String, text: String)] {
        let root = ScratchCluster.packageRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        return try (["README.md"] + docs).map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }
}
