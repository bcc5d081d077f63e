import Foundation

/// The contract, `openapi.yaml` at the repository root, served at `GET /openapi.yaml`.
enum OpenAPIDocument {
    /// Read once, as the application is built: looked for in `file` (DIARY_OPENAPI_FILE), the
    /// working directory, then beside the sources.
    static func text(file: String?) -> String {
        let candidates = [
            file,
            "openapi.yaml",
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("openapi.yaml").path,
        ].compactMap { $0 }
        for path in candidates {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) { return text }
        }
        return "openapi: 3.1.0\ninfo: {title: diary-server, version: unknown}\npaths: {}\n"
    }
}
