import Foundation
import Logging
import PostgresClient

/// Fresh, real PostgreSQL databases for tests, one per test, so tests can run in parallel.
///
/// `make test` starts the project's cluster and sets TEST_DATABASE_URL to a superuser
/// connection on it. A database cloned from a template costs a file copy, not a migration.
public enum TestDatabase {
    public static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return logger
    }()

    /// The roles `scripts/postgres.sh` creates: the schema's owner, who migrates, and
    /// the server's login role, to which every policy applies.
    public static let ownerRole = "diary_owner"
    public static let appRole = "diary_app"

    public static func adminConfiguration() throws -> PostgresConfiguration {
        guard let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] else {
            throw PostgresError(kind: .invalidConfiguration, message: "TEST_DATABASE_URL is not set: run the tests with `make test`")
        }
        return try PostgresConfiguration(url: url)
    }

    /// Runs `body` with a new database (empty, or copied from `template`) and drops it afterwards.
    public static func with<Result>(
        template: String? = nil,
        _ body: (PostgresConfiguration) async throws -> Result
    ) async throws -> Result {
        let configuration = try await create(template: template)
        do {
            let result = try await body(configuration)
            try await drop(configuration.database!)
            return result
        } catch {
            try? await drop(configuration.database!)
            throw error
        }
    }

    /// Copied file by file (`strategy file_copy`), not through the WAL: PostgreSQL 15's default
    /// writes the whole template to the WAL, some 5 MB a database here, and with every suite
    /// creating databases at once the backends queued on the WAL's insert locks until
    /// connections timed out (`Benchmarks/results/test-database-strategy-20261128.txt`).
    public static func create(template: String? = nil) async throws -> PostgresConfiguration {
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await withAdminPool { pool in
            try await pool.query(PostgresQuery(unsafeSQL: "create database \(name) template \(template ?? "template1") strategy file_copy"))
        }
        var configuration = try adminConfiguration()
        configuration.database = name
        return configuration
    }

    public static func drop(_ name: String) async throws {
        try await withAdminPool { pool in
            try await pool.query(PostgresQuery(unsafeSQL: "drop database if exists \(name) with (force)"))
        }
    }

    /// A small pool on the admin database; closed when `body` returns.
    @discardableResult
    public static func withAdminPool<Result>(_ body: (PostgresPool) async throws -> Result) async throws -> Result {
        try await withPool(try adminConfiguration(), size: 1, body)
    }

    public static func withPool<Result>(
        _ configuration: PostgresConfiguration,
        size: Int = 4,
        acquireTimeout: Duration = .seconds(10),
        sharedConnections: Int? = nil,
        _ body: (PostgresPool) async throws -> Result
    ) async throws -> Result {
        let options = PostgresPool.Options(size: size, acquireTimeout: acquireTimeout, sharedConnections: sharedConnections)
        let pool = PostgresPool(configuration: configuration, options: options, logger: logger)
        do {
            let result = try await body(pool)
            try await pool.close()
            return result
        } catch {
            try? await pool.close()
            throw error
        }
    }
}

extension TestDatabase {
    /// The same database reached through the PgBouncer that `make test` starts in front of
    /// the cluster (scripts/pgbouncer.sh: transaction mode, one server connection per
    /// database and user), with statements sent unnamed as behind any such pooler.
    public static func viaPgBouncer(_ database: PostgresConfiguration) throws -> PostgresConfiguration {
        guard let url = ProcessInfo.processInfo.environment["TEST_PGBOUNCER_URL"] else {
            throw PostgresError(kind: .invalidConfiguration, message: "TEST_PGBOUNCER_URL is not set: run the tests with `make test`")
        }
        let bouncer = try PostgresConfiguration(url: url)
        var configuration = database
        configuration.host = bouncer.host
        configuration.port = bouncer.port
        configuration.parameters.removeValue(forKey: "host")
        configuration.preparedStatements = false
        return configuration
    }
}

extension PostgresConfiguration {
    /// The same database, logged into as `role` (the test cluster trusts local connections).
    public func `as`(_ role: String) -> PostgresConfiguration {
        var configuration = self
        configuration.user = role
        configuration.password = nil
        return configuration
    }
}
