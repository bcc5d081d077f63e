import Foundation
import Logging
import PostgresClient
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// A database migrated once per set of migration files, used as the template every test clones.
enum MigratedTemplate {
    static let migrationsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql/migrations")

    static let definitionsDirectory = MigrationFile.definitionsDirectory(besideMigrations: migrationsDirectory)

    static func definitions() throws -> [MigrationFile] {
        try MigrationFile.load(from: definitionsDirectory, versionDigits: 2)
    }

    private static let shared = Task<String, any Error> { try await build() }

    /// The template's name; builds it on first use in this process.
    static func name() async throws -> String {
        try await shared.value
    }

    /// Runs `body` against a fresh copy of the migrated schema.
    static func withDatabase<Result>(_ body: (PostgresConfiguration) async throws -> Result) async throws -> Result {
        try await TestDatabase.with(template: try await name(), body)
    }

    /// Migrates as in production: by the owner role, so the owner owns every object.
    static func migrate(_ database: PostgresConfiguration, files: [MigrationFile]? = nil, definitions: [MigrationFile]? = nil) async throws {
        let files = try files ?? MigrationFile.load(from: migrationsDirectory)
        let definitions = try definitions ?? Self.definitions()
        _ = try await TestDatabase.withPool(database.as(TestDatabase.ownerRole), size: 1) { pool in
            try await Migrator(pool: pool, files: files, definitions: definitions, logger: TestDatabase.logger).migrate()
        }
    }

    private static func build() async throws -> String {
        let files = try MigrationFile.load(from: migrationsDirectory)
        let definitions = try Self.definitions()
        let fingerprint = (files + definitions).map(\.checksum).joined().utf8.reduce(into: UInt64(14_695_981_039_346_656_037)) { hash, byte in
            hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211
        }
        let name = "diary_template_" + String(fingerprint, radix: 16)
        // Test processes started at once agree on one builder through an advisory lock.
        try await TestDatabase.withAdminPool { admin in
            try await admin.withConnection { connection in
                try await connection.query("select pg_advisory_lock(\(Int(bitPattern: UInt(fingerprint & 0x7fff_ffff_ffff))))")
                // The lock goes with the admin pool's connection when the pool closes.
                let exists = try await connection.query("select 1 from pg_database where datname = \(name)")
                guard exists.isEmpty else { return }
                let building = try await TestDatabase.create()
                try await connection.query(PostgresQuery(unsafeSQL: "alter database \(building.database!) owner to \(TestDatabase.ownerRole)"))
                try await migrate(building, files: files, definitions: definitions)
                try await connection.query(PostgresQuery(unsafeSQL: "alter database \(building.database!) rename to \(name)"))
            }
        }
        return name
    }
}
