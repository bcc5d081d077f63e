import Logging
import NIOPosix

/// A connection leased from `PostgresPool` for the duration of one closure.
///
/// A call sends from the caller's thread without blocking and suspends until the
/// pool's I/O driver has the answers; the event loops never wait on the database.
/// Calls on one lease must not overlap.
public struct PostgresConnection: Sendable {
    let connection: LibPQConnection
    let driver: PostgresIODriver
    let threads: NIOThreadPool
    let logger: Logger

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await pipeline([statement])[0]
    }

    /// Sends the statements together and waits once for all the answers. Outside an
    /// explicit transaction they run as one implicit transaction, which the pipeline's
    /// sync commits, or rolls back if any of them failed.
    public func pipeline(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        logger.trace("postgres pipeline", metadata: ["statements": "\(statements.map(\.description))"])
        return try await driver.run(statements, on: connection)
    }

    /// `BEGIN`, the statements, `COMMIT`: all in one round trip. If any statement
    /// fails, nothing commits and the error is thrown.
    ///
    /// `afterCommit` runs in the same round trip once the transaction has committed, and
    /// only then: statements that cannot fail, such as a `pg_notify` that must not hold the
    /// transaction's commit behind the lock every notifying commit takes.
    public func transaction(
        _ statements: [PostgresQuery], mode: TransactionMode = .readCommitted, afterCommit: [PostgresQuery] = []
    ) async throws -> [PostgresRows] {
        do {
            let results = try await driver.run([mode.begin] + statements + ["COMMIT"] + afterCommit, on: connection)
            return Array(results.dropFirst().prefix(statements.count))
        } catch {
            // The failed statement aborted the transaction, and the COMMIT after it did not run.
            if !connection.isBroken && !connection.isIdle {
                _ = try? await driver.run(["ROLLBACK"], on: connection)
            }
            throw error
        }
    }

    /// How a transaction sees the data.
    public enum TransactionMode: Sendable {
        /// Each statement sees what had committed when it began: PostgreSQL's default.
        case readCommitted
        /// Every statement sees one snapshot, taken at the first, and none may write. Such a
        /// transaction never fails to serialize, and takes no lock beyond each statement's.
        case snapshotReadOnly

        /// The BEGIN that opens it: the mode goes with the BEGIN, where a separate SET
        /// TRANSACTION would come after the statement timeout a connection sends (25001).
        public var begin: PostgresQuery {
            switch self {
            case .readCommitted: "BEGIN"
            case .snapshotReadOnly: "begin isolation level repeatable read, read only"
            }
        }
    }

    /// Runs several statements in one string, as a migration file holds them. The text
    /// is trusted SQL from the project's own files, never anything a user sent.
    public func runScript(unsafeSQL script: String) async throws {
        let connection = self.connection
        try await threads.runIfActive { try connection.runScript(script) }
    }

    /// Runs `body` inside `BEGIN … COMMIT`, and issues `ROLLBACK` when it throws.
    /// Costs a round trip per statement; prefer `transaction(_:)` when the statements are known up front.
    public func withTransaction<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        try await query("BEGIN")
        let result: Result
        do {
            result = try await body(self)
        } catch {
            if !connection.isBroken {
                do {
                    try await query("ROLLBACK")
                } catch let rollbackError {
                    logger.error("rollback failed", metadata: ["error": "\(rollbackError)"])
                }
            }
            throw error
        }
        try await query("COMMIT")
        return result
    }
}
