import Crypto
import Foundation

/// One file of sql/migrations, named `NNNN_name.sql`.
struct MigrationFile: Sendable, Equatable {
    var version: Int
    var name: String
    var fileName: String
    var sql: String
    /// SHA-256 of the file's bytes, hex.
    var checksum: String

    /// Reads every migration in `directory`, ordered by version. Refuses files
    /// that look like migrations but are misnamed, and versions used twice.
    static func load(from directory: URL) throws -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError(description: "cannot read the migrations folder \(directory.path): \(error.localizedDescription)")
        }
        var files: [MigrationFile] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") {
            guard let match = fileName.wholeMatch(of: /(\d{4})_([a-z0-9_]+)\.sql/), let version = Int(match.1) else {
                throw MigrationError(description: "\(fileName): migration files are named NNNN_name.sql (lowercase name)")
            }
            let data = try Data(contentsOf: directory.appendingPathComponent(fileName))
            guard let sql = String(data: data, encoding: .utf8) else {
                throw MigrationError(description: "\(fileName) is not UTF-8")
            }
            files.append(MigrationFile(
                version: version, name: String(match.2), fileName: fileName, sql: sql,
                checksum: SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            ))
        }
        for (previous, next) in zip(files, files.dropFirst()) where previous.version == next.version {
            throw MigrationError(description: "\(previous.fileName) and \(next.fileName) share version \(next.version)")
        }
        return files
    }
}

struct MigrationError: Error, CustomStringConvertible {
    var description: String
}
