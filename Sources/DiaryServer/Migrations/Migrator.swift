import Foundation
import Logging
import PostgresClient

/// Applies sql/migrations in order, each file in its own transaction, and records
/// them in `schema_migrations`; then sql/definitions, each file whose text changed since it
/// was last applied, or every one after any migration ran, recorded in `schema_definitions`.
///
/// A session-level advisory lock, held on one connection for the whole run, makes
/// concurrent migrators take turns: the second finds the work done. An applied migration
/// whose checksum changed stops everything before any new file runs; a definition file is
/// written to be applied again, so its changes are what it is for.
struct Migrator {
    let pool: PostgresPool
    let files: [MigrationFile]
    /// sql/definitions: functions, views, triggers and policies, each written once.
    var definitions: [MigrationFile] = []
    let logger: Logger
    /// Set at the start of each file's transaction: on a Citus cluster, what a later
    /// migration needs there (`CitusSchema.migrationSettings`).
    var settings: [PostgresQuery] = []
    /// On Citus: each statement of a file sent alone (`MigrationFile.statements`), and a
    /// definition file's policies as the cluster takes them (`CitusSchema.definitionStatement`).
    var onCitus = false

    /// Arbitrary, fixed, and shared by every migrator of this schema.
    static let advisoryLockKey = 7_340_425_118_001

    enum State: Equatable {
        case applied(Date)
        case pending
    }

    struct Status: Equatable {
        var file: MigrationFile
        var state: State
    }

    /// What one run applied.
    struct Run: Equatable {
        var migrations: [MigrationFile] = []
        var definitions: [MigrationFile] = []
        var isEmpty: Bool { migrations.isEmpty && definitions.isEmpty }
    }

    struct AppliedMigration {
        var version: Int
        var name: String
        var checksum: String
        var appliedAt: Date
    }

    /// What has been applied and what is pending, after checking every applied checksum.
    func status() async throws -> [Status] {
        try await pool.withConnection { connection in
            try await ensureTable(connection)
            return try await plan(connection)
        }
    }

    /// The definition files that the next run applies: those whose text changed since they
    /// were applied, or all of them when a migration is pending.
    func pendingDefinitions() async throws -> [MigrationFile] {
        try await pool.withConnection { connection in
            try await ensureTable(connection)
            let migrationsPending = try await plan(connection).contains { $0.state == .pending }
            return try await changedDefinitions(connection, all: migrationsPending)
        }
    }

    /// Applies every pending file, then the definitions, and returns what it applied.
    @discardableResult
    func migrate() async throws -> Run {
        try await pool.withConnection { connection in
            try await connection.query("select pg_advisory_lock(\(Self.advisoryLockKey))")
            do {
                let applied = try await applyPending(connection)
                try await connection.query("select pg_advisory_unlock(\(Self.advisoryLockKey))")
                return applied
            } catch {
                _ = try? await connection.query("select pg_advisory_unlock(\(Self.advisoryLockKey))")
                throw error
            }
        }
    }

    private func applyPending(_ connection: PostgresConnection) async throws -> Run {
        try await ensureTable(connection)
        var run = Run()
        run.migrations = try await plan(connection).filter { $0.state == .pending }.map(\.file)
        for file in run.migrations {
            try await apply(file, as: "migration", on: connection, statements: onCitus ? file.statements : [file.sql], record: """
                insert into schema_migrations (version, name, checksum) values (\(file.version), \(file.name), \(file.checksum))
                """)
        }
        // A migration may have dropped a view or a policy in its way, to be created again
        // from its file: so after any migration, every definition applies again.
        run.definitions = try await changedDefinitions(connection, all: !run.migrations.isEmpty)
        for file in run.definitions {
            let statements = onCitus ? try await citusStatements(of: file, on: connection) : [file.sql]
            try await apply(file, as: "definitions", on: connection, statements: ["set local check_function_bodies = off"] + statements, record: """
                insert into schema_definitions (file_name, checksum) values (\(file.fileName), \(file.checksum))
                on conflict (file_name) do update set checksum = excluded.checksum, applied_at = now()
                """)
        }
        if run.isEmpty { logger.info("database is up to date", metadata: ["migrations": "\(files.count)", "definitions": "\(definitions.count)"]) }
        return run
    }

    /// A definition file's statements as the cluster takes them (`CitusSchema.definitionStatement`).
    private func citusStatements(of file: MigrationFile, on connection: PostgresConnection) async throws -> [String] {
        var statements: [String] = []
        for statement in file.statements {
            let spelled = try await CitusSchema.definitionStatement(statement) { name, table in
                try await connection.query("select exists (select from pg_policies where schemaname = 'public' and policyname = \(name) and tablename = \(table)) as found")
                    .first?.decode("found", as: Bool.self) == true
            }
            if let spelled { statements.append(spelled) }
        }
        return statements
    }

    /// One file in one transaction, recorded in the same transaction, and logged with how long it took.
    private func apply(_ file: MigrationFile, as kind: String, on connection: PostgresConnection, statements: [String], record: PostgresQuery) async throws {
        let clock = ContinuousClock()
        let started = clock.now
        do {
            try await connection.query("BEGIN")
            for setting in settings { try await connection.query(setting) }
            for statement in statements {
                try await connection.runScript(unsafeSQL: statement)
            }
            try await connection.query(record)
            try await connection.query("COMMIT")
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw MigrationError(description: Self.describeFailure(of: file, error))
        }
        logger.info("applied \(kind)", metadata: ["file": "\(file.fileName)", "duration": "\(clock.now - started)"])
    }

    private func changedDefinitions(_ connection: PostgresConnection, all: Bool) async throws -> [MigrationFile] {
        if all { return definitions }
        var applied: [String: String] = [:]
        for row in try await connection.query("select file_name, checksum from schema_definitions") {
            let (name, checksum) = try row.decode((String, String).self)
            applied[name] = checksum
        }
        return definitions.filter { applied[$0.fileName] != $0.checksum }
    }

    private func ensureTable(_ connection: PostgresConnection) async throws {
        try await connection.query("""
            create table if not exists schema_migrations (
                version    integer primary key,
                name       text not null,
                checksum   text not null,
                applied_at timestamptz not null default now()
            )
            """)
        try await connection.query("""
            create table if not exists schema_definitions (
                file_name  text primary key,
                checksum   text not null,
                applied_at timestamptz not null default now()
            )
            """)
    }

    private func plan(_ connection: PostgresConnection) async throws -> [Status] {
        let rows = try await connection.query("select version, name, checksum, applied_at from schema_migrations order by version")
        var applied: [Int: AppliedMigration] = [:]
        for row in rows {
            let (version, name, checksum, appliedAt) = try row.decode((Int, String, String, Date).self)
            applied[version] = AppliedMigration(version: version, name: name, checksum: checksum, appliedAt: appliedAt)
        }
        let known = Set(files.map(\.version))
        for missing in applied.values where !known.contains(missing.version) {
            logger.warning("an applied migration has no file", metadata: ["version": "\(missing.version)", "name": "\(missing.name)"])
        }
        return try files.map { file in
            guard let record = applied[file.version] else { return Status(file: file, state: .pending) }
            guard record.checksum == file.checksum else {
                throw MigrationError(description: "\(file.fileName) was changed after it was applied (checksum \(record.checksum.prefix(12))… in the database, \(file.checksum.prefix(12))… on disk); restore it and put the change in a new migration")
            }
            return Status(file: file, state: .applied(record.appliedAt))
        }
    }

    /// The Postgres error in full, with the line it points at: an admin needs all of it.
    static func describeFailure(of file: MigrationFile, _ error: any Error) -> String {
        guard let error = error as? PostgresError else { return "\(file.fileName) failed: \(error)" }
        var text = "\(file.fileName) failed"
        if let position = error.position {
            let line = file.sql.prefix(position).split(separator: "\n", omittingEmptySubsequences: false).count
            text += " at line \(line)"
        }
        return text + ": " + serverMessage(error) + "\nThe database is as it was before this file."
    }

    /// PostgreSQL's own words for a failed schema change: message, SQLSTATE, DETAIL and HINT.
    /// Migrations and layouts bind no user data, so they are safe to show.
    static func serverMessage(_ error: PostgresError) -> String {
        var text = error.message
        if let state = error.sqlState { text += " (SQLSTATE \(state))" }
        if let detail = error.detail { text += "\nDETAIL: \(detail)" }
        if let hint = error.hint { text += "\nHINT: \(hint)" }
        return text
    }
}
