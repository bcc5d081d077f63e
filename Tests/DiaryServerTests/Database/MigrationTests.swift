import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Migrations")
struct MigrationTests {
    static func files() throws -> [MigrationFile] {
        try MigrationFile.load(from: MigratedTemplate.migrationsDirectory)
    }

    static func appliedCount(_ pool: PostgresPool) async throws -> Int {
        let row = try #require(try await pool.query("select count(*)::int8 as n from schema_migrations").first)
        return try row.decode("n", as: Int.self)
    }

    @Test("a fresh database migrates; a second run applies nothing")
    func freshThenNoOp() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let files = try Self.files()
                let migrator = Migrator(pool: pool, files: files, logger: TestDatabase.logger)
                let value1 = try await migrator.migrate().count
                #expect(value1 == files.count)
                let value2 = try await migrator.migrate().isEmpty
                #expect(value2)
                let value3 = try await Self.appliedCount(pool)
                #expect(value3 == files.count)
                let statuses = try await migrator.status()
                #expect(statuses.allSatisfy { if case .applied = $0.state { true } else { false } })
            }
        }
    }

    @Test("a file changed after it was applied is refused and named")
    func changedChecksumRefused() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                var files = try Self.files()
                files[0].sql += "\n-- edited"
                files[0].checksum = String(repeating: "0", count: 64)
                let error = await #expect(throws: MigrationError.self) {
                    try await Migrator(pool: pool, files: files, logger: TestDatabase.logger).migrate()
                }
                #expect(error?.description.contains(files[0].fileName) == true)
            }
        }
    }

    @Test("a failing migration leaves the database as it was and reports the Postgres error with its line")
    func failedMigrationRollsBack() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                var files = try Self.files()
                let broken = MigrationFile(
                    version: 9999, name: "broken", fileName: "9999_broken.sql",
                    sql: "create table half_done (id int);\nselect * from no_such_table;\n", checksum: String(repeating: "a", count: 64)
                )
                files.append(broken)
                let error = await #expect(throws: MigrationError.self) {
                    try await Migrator(pool: pool, files: files, logger: TestDatabase.logger).migrate()
                }
                #expect(error?.description.contains("9999_broken.sql failed at line 2") == true)
                #expect(error?.description.contains("no_such_table") == true)
                #expect(error?.description.contains("42P01") == true)
                let leftover = try await pool.query("select 1 from pg_tables where tablename = 'half_done'")
                #expect(leftover.isEmpty)
                let value4 = try await Self.appliedCount(pool)
                #expect(value4 == files.count - 1)
            }
        }
    }

    @Test("two migrators started at once take turns: everything is applied exactly once")
    func concurrentMigrators() async throws {
        try await TestDatabase.with { configuration in
            let files = try Self.files()
            let applied = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await TestDatabase.withPool(configuration, size: 1) { pool in
                            try await Migrator(pool: pool, files: files, logger: TestDatabase.logger).migrate().count
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(applied.sorted() == [0, files.count])
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let value5 = try await Self.appliedCount(pool)
                #expect(value5 == files.count)
            }
        }
    }

    @Test("the same files apply cleanly in order with plain psql, each in one transaction as the README says")
    func psqlApplies() async throws {
        let configuration = try await TestDatabase.create()
        defer { Task { try? await TestDatabase.drop(configuration.database!) } }
        for file in try Self.files() {
            var environment = ProcessInfo.processInfo.environment
            environment["PGUSER"] = configuration.user
            let psql = try await Spawn.run("/usr/bin/env", [
                "psql", "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", configuration.database!, "-f",
                MigratedTemplate.migrationsDirectory.appendingPathComponent(file.fileName).path,
            ], environment: environment)
            #expect(psql.status == 0, "psql failed on \(file.fileName): \(psql.output)")
        }
    }
}
