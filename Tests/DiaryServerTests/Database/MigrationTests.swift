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

    static func definitions() throws -> [MigrationFile] {
        try MigratedTemplate.definitions()
    }

    static func appliedCount(_ pool: PostgresPool) async throws -> Int {
        let row = try #require(try await pool.query("select count(*)::int8 as n from schema_migrations").first)
        return try row.decode("n", as: Int.self)
    }

    @Test("a fresh database migrates, then takes every definition; a second run applies nothing")
    func freshThenNoOp() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let files = try Self.files(), definitions = try Self.definitions()
                let migrator = Migrator(pool: pool, files: files, definitions: definitions, logger: TestDatabase.logger)
                let first = try await migrator.migrate()
                #expect(first.migrations == files)
                #expect(first.definitions == definitions)
                let second = try await migrator.migrate()
                #expect(second.isEmpty)
                let pendingDefinitions = try await migrator.pendingDefinitions()
                #expect(pendingDefinitions.isEmpty)
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
                            try await Migrator(pool: pool, files: files, logger: TestDatabase.logger).migrate().migrations.count
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

    @Test("the same files apply cleanly in order with plain psql, each in one transaction as the README says, and build what the migrator builds")
    func psqlApplies() async throws {
        let configuration = try await TestDatabase.create()
        defer { Task { try? await TestDatabase.drop(configuration.database!) } }
        var environment = ProcessInfo.processInfo.environment
        environment["PGUSER"] = configuration.user
        let psql = try await Spawn.run("/usr/bin/env", [
            "bash", SchemaFileTests.root.appendingPathComponent("scripts/schema.sh").path, "apply", "-d", configuration.database!,
        ], environment: environment)
        #expect(psql.status == 0, "psql failed: \(psql.output)")
        let byPsql = try await SchemaFileTests.dump(configuration)
        let byMigrator = try await MigratedTemplate.withDatabase { try await SchemaFileTests.dump($0) }
        #expect(SchemaFileTests.firstDifference(byMigrator, byPsql) == nil)
    }

    @Test("a definition file whose text changed applies again, alone, and is recorded")
    func changedDefinitionAppliesAlone() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                var definitions = try Self.definitions()
                let index = try #require(definitions.firstIndex { $0.fileName.hasSuffix("_diaries.sql") })
                definitions[index].sql += "\nCOMMENT ON VIEW public.member_profiles IS 'changed by a test';\n"
                definitions[index].checksum = String(repeating: "b", count: 64)
                let migrator = Migrator(pool: pool, files: try Self.files(), definitions: definitions, logger: TestDatabase.logger)
                let pending = try await migrator.pendingDefinitions()
                #expect(pending.map(\.fileName) == [definitions[index].fileName])
                let run = try await migrator.migrate()
                #expect(run.migrations.isEmpty)
                #expect(run.definitions.map(\.fileName) == [definitions[index].fileName])
                let comment = try await pool.query("select obj_description('public.member_profiles'::regclass, 'pg_class') as c").first?.decode("c", as: String?.self)
                #expect(comment == "changed by a test")
                let again = try await migrator.migrate()
                #expect(again.isEmpty)
            }
        }
    }

    @Test("after a migration, every definition applies again: a view a migration dropped in its way comes back from its file")
    func definitionsFollowMigrations() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                var files = try Self.files()
                files.append(MigrationFile(
                    version: 9999, name: "drops_a_view", fileName: "9999_drops_a_view.sql",
                    sql: "drop view member_profiles;\n", checksum: String(repeating: "c", count: 64)
                ))
                let definitions = try Self.definitions()
                let run = try await Migrator(pool: pool, files: files, definitions: definitions, logger: TestDatabase.logger).migrate()
                #expect(run.migrations.map(\.version) == [9999])
                #expect(run.definitions == definitions)
                let view = try await pool.query("select to_regclass('public.member_profiles') is not null as back").first?.decode("back", as: Bool.self)
                #expect(view == true)
            }
        }
    }

    @Test("a failing definition file leaves the database as it was, is named, and is tried again by the next run")
    func failedDefinitionRollsBack() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                var definitions = try Self.definitions()
                definitions.append(MigrationFile(
                    version: 99, name: "broken", fileName: "99_broken.sql",
                    sql: "create or replace view half_done as select 1 as one;\nselect * from no_such_table;\n",
                    checksum: String(repeating: "d", count: 64)
                ))
                let migrator = Migrator(pool: pool, files: try Self.files(), definitions: definitions, logger: TestDatabase.logger)
                let error = await #expect(throws: MigrationError.self) { try await migrator.migrate() }
                #expect(error?.description.contains("99_broken.sql failed at line 2") == true, "\(error?.description ?? "")")
                let leftover = try await pool.query("select 1 from pg_views where viewname = 'half_done'")
                #expect(leftover.isEmpty)
                let pending = try await migrator.pendingDefinitions()
                #expect(pending.map(\.fileName) == ["99_broken.sql"])
            }
        }
    }
}
