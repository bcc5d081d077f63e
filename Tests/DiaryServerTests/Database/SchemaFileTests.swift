import Foundation
import PostgresClient
import Testing
import TestSupport

/// sql/schema.sql is the schema sql/migrations and sql/definitions build, printed by
/// `scripts/schema.sh dump` for reading; `make schema` writes it. This holds it to them: a
/// migration or definition added or changed without `make schema` fails here.
@Suite("sql/schema.sql")
struct SchemaFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("is the dump of a freshly migrated database: after changing sql/migrations or sql/definitions, run `make schema`")
    func schemaFileIsCurrent() async throws {
        let file = Self.root.appendingPathComponent("sql/schema.sql")
        let expected = try #require(try? String(contentsOf: file, encoding: .utf8), "sql/schema.sql is missing: run `make schema`")
        let dumped = try await MigratedTemplate.withDatabase { database in
            try await Self.dump(database)
        }
        let difference = Self.firstDifference(expected, dumped)
        #expect(difference == nil, "sql/schema.sql is not the schema sql/migrations and sql/definitions build: run `make schema` (\(difference ?? ""))")
    }

    /// `scripts/schema.sh dump` of `database`, reached through the PG* variables: the
    /// configuration cannot give its URL back.
    static func dump(_ database: PostgresConfiguration) async throws -> String {
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("schema-dump-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: errors) }
        let (status, dumped) = try await Spawn.run(
            "/usr/bin/env", ["bash", root.appendingPathComponent("scripts/schema.sh").path, "dump"],
            environment: environment(for: database), errorsPath: errors
        )
        let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        try #require(status == 0, "scripts/schema.sh dump failed: \(message)")
        return dumped
    }

    /// This process's environment with libpq's variables naming `database`, and no others, so
    /// nothing left over from the caller's shell changes where pg_dump connects.
    static func environment(for database: PostgresConfiguration) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGHOST"] = database.host
        environment["PGPORT"] = database.port.map { String($0) }
        environment["PGUSER"] = database.user
        environment["PGPASSWORD"] = database.password
        environment["PGDATABASE"] = database.database
        environment["PGCONNECT_TIMEOUT"] = String(database.connectTimeoutSeconds)
        let variables = [
            "hostaddr": "PGHOSTADDR", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT",
            "sslkey": "PGSSLKEY", "options": "PGOPTIONS", "target_session_attrs": "PGTARGETSESSIONATTRS",
        ]
        for (keyword, value) in database.parameters {
            if let variable = variables[keyword] { environment[variable] = value }
        }
        return environment
    }

    /// The first line where the file and the dump differ, or nil when they are equal: the
    /// whole of both would bury the failure.
    static func firstDifference(_ expected: String, _ actual: String) -> String? {
        guard expected != actual else { return nil }
        let file = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let dump = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let common = min(file.count, dump.count)
        let line = (0..<common).first { file[$0] != dump[$0] } ?? common
        func quoted(_ lines: [Substring]) -> String { line < lines.count ? "\"\(lines[line])\"" : "the end of the text" }
        return "first difference at line \(line + 1): the file has \(quoted(file)), the migrations give \(quoted(dump))"
    }
}
