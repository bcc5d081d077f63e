import ArgumentParser
import Logging
import PostgresClient

/// The database flags shared by every subcommand.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "postgres:// URL of the database (default: $DATABASE_URL; for migrate, $MIGRATION_DATABASE_URL first).")
    var databaseURL: String?

    @Option(name: .customLong("database-wait"), help: "Seconds to keep retrying an unreachable database at start-up (default: $DB_WAIT_SECONDS or 30).")
    var databaseWaitSeconds: Int?

    /// Runs `body` on one connection as the schema's owner (`migrationConfiguration`), once
    /// the database answers, then closes it. For the maintenance commands: a failure prints
    /// "`command`: error" and exits 1.
    func withOwnerPool<Result: Sendable>(command: String, logger: Logger, _ body: (PostgresPool) async throws -> Result) async throws -> Result {
        let pool: PostgresPool
        do {
            pool = PostgresPool(configuration: try migrationConfiguration(), options: .init(size: 1, acquireTimeout: .seconds(3600)), logger: logger)
        } catch {
            printError("\(command): \(error)")
            throw ExitCode.failure
        }
        do {
            try await DatabaseStartup.waitUntilReachable(pool, limit: try waitDuration(), logger: logger)
            let result = try await body(pool)
            try await pool.close()
            return result
        } catch {
            printError("\(command): \(error)")
            try? await pool.close()
            throw ExitCode.failure
        }
    }

}
