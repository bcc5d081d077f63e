import Foundation
import NIOConcurrencyHelpers
import PostgresClient

/// The only way an authenticated request reaches the database.
///
/// Every call is one transaction and one round trip: `BEGIN`, `authenticate(session,
/// user)` — which checks the session is live and sets `app.user_id` for this
/// transaction only — then the statements, then `COMMIT`. Policies read the caller
/// through `app_user_id()`, so no statement can run as nobody, and no identity outlives
/// its transaction on a pooled connection.
///
/// With `ServerConfiguration.sharedReads`, a request that only reads queues its
/// transaction on the pool's shared connections; writes always keep a connection of
/// their own, so that their commits group on the WAL flush (`PostgresPool.Placement`).
struct RequestScope: Sendable {
    let identity: TokenService.Identity
    private let pool: PostgresPool
    private let placement: PostgresPool.Placement

    init(identity: TokenService.Identity, pool: PostgresPool, placement: PostgresPool.Placement = .ownConnection) {
        self.identity = identity
        self.pool = pool
        self.placement = placement
    }

    var userID: UUID { identity.userID }

    /// Runs the statements as the caller and returns each one's rows.
    func run(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        let transaction = ["select authenticate(\(identity.sessionID), \(identity.userID))"] + statements
        #if DEBUG
        Self.recorder?.record(transaction)
        #endif
        let results = try await pool.transaction(transaction, placement: placement)
        return Array(results.dropFirst())
    }

    func run(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await run([statement])[0]
    }

    #if DEBUG
    /// Debug builds only: a test collects the statements of each transaction a request
    /// sends (BEGIN and COMMIT aside), to hold the benchmark's pgbench scripts to them.
    @TaskLocal static var recorder: StatementRecorder?

    final class StatementRecorder: Sendable {
        private let transactions = NIOLockedValueBox<[[PostgresQuery]]>([])

        init() {}

        func record(_ statements: [PostgresQuery]) { transactions.withLockedValue { $0.append(statements) } }
        var recorded: [[PostgresQuery]] { transactions.withLockedValue { $0 } }
    }
    #endif
}
