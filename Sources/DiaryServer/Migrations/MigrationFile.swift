import Crypto
import Foundation

/// One file of sql/migrations, named `NNNN_name.sql`, or of sql/definitions, named `NN_name.sql`
/// (its version is its place in the order the definitions apply in).
struct MigrationFile: Sendable, Equatable {
    var version: Int
    var name: String
    var fileName: String
    var sql: String
    /// SHA-256 of the file's bytes, hex.
    var checksum: String

    /// The definitions' folder: `definitions` beside the migrations' folder, so that the two
    /// always come from one release.
    static func definitionsDirectory(besideMigrations migrations: URL) -> URL {
        migrations.standardizedFileURL.deletingLastPathComponent().appendingPathComponent("definitions")
    }

    /// Reads every migration in `directory`, ordered by version (`versionDigits` digits: 4 for
    /// migrations, 2 for definitions). Refuses files that look like migrations but are
    /// misnamed, and versions used twice.
    static func load(from directory: URL, versionDigits: Int = 4) throws -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError(description: "cannot read the folder \(directory.path): \(error.localizedDescription)")
        }
        var files: [MigrationFile] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") {
            guard let match = fileName.wholeMatch(of: /(\d+)_([a-z0-9_]+)\.sql/), match.1.count == versionDigits, let version = Int(match.1) else {
                let pattern = String(repeating: "N", count: versionDigits)
                throw MigrationError(description: "\(fileName): files in \(directory.lastPathComponent) are named \(pattern)_name.sql (lowercase name)")
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
