package import Foundation
import Metrics
import NIOConcurrencyHelpers
package import PostgresClient

/// The only way an authenticated request reaches the database.
///
/// Every call is one transaction and one round trip: `BEGIN`, `authenticate(session,
/// user)`, which checks the session is live and sets `app.user_id` for this transaction
/// only, then the statements, then `COMMIT`. Policies read the caller through
/// `app_user_id()`, so no statement can run as nobody, and no identity outlives its
/// transaction on a pooled connection.
///
/// Writes (`run`) keep a connection of their own, so that their commits group on the WAL
/// flush. Reads (`read`) go where the server is configured to send them: their own
/// connection, or queued on the pool's shared ones (`PostgresPool.Placement`).
package struct RequestScope: Sendable {
    package let identity: TokenService.Identity
    /// Mints the URLs of the photos this caller's reads return: whatever RLS lets the
    /// caller read, and nothing else, gets a URL.
    package let photoLinks: PhotoLinks
    /// Mints the invite links of the diaries this caller's reads return.
    package let inviteLinks: InviteLinks
    private let pool: PostgresPool
    private let readPlacement: PostgresPool.Placement
    package let database: Database

    /// What the statements run on.
    package enum Database: Sendable {
        /// One PostgreSQL.
        case single
        /// A Citus coordinator (`DB_CITUS=1`). A write's read-back goes through a router that
        /// reads the diary's shards in the connection that wrote them (`ReadBack`), and every
        /// statement calls the identity functions instead of selecting them once
        /// (`CitusSpelling`): Citus plans a subquery without FROM apart, and then asks every shard.
        case citus
    }

    package init(
        identity: TokenService.Identity, pool: PostgresPool, photoLinks: PhotoLinks, inviteLinks: InviteLinks,
        readPlacement: PostgresPool.Placement = .ownConnection, database: Database = .single
    ) {
        self.identity = identity
        self.pool = pool
        self.photoLinks = photoLinks
        self.inviteLinks = inviteLinks
        self.readPlacement = readPlacement
        self.database = database
    }

    package var userID: UUID { identity.userID }

    /// The same caller, with every photo's URL its path inside an export's ZIP.
    package func exporting() -> RequestScope {
        RequestScope(
            identity: identity, pool: pool, photoLinks: photoLinks.serving(.archive), inviteLinks: inviteLinks,
            readPlacement: readPlacement, database: database)
    }

    /// Runs statements that may change data, as the caller, and returns each one's rows;
    /// once they have committed, in the same round trip, sends what they announced (see
    /// `Announcement`).
    package func run(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        try await transaction(statements, placement: .ownConnection, afterCommit: [Announcement.pending])
    }

    package func run(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await run([statement])[0]
    }

    /// Runs `statements` as `run` does, then reads what they wrote with `readBack`, in the
    /// same transaction (`ReadBack`); returns the rows of both, in order.
    package func run(_ statements: [PostgresQuery], thenRead readBack: [ReadBack]) async throws -> [PostgresRows] {
        try await run(statements + readBack.map { $0.spelled(for: database) })
    }

    /// Runs `write`, an expression whose value is the id of the row it wrote or found, then
    /// `readBack`, given a spelling of that id, and returns the read-back's rows.
    /// The response comes from the row the write names, never from a second lookup of what
    /// the request named, which another request can change in between (a join's invite
    /// code, rotated). The id passes through the transaction-local `app.written`.
    package func run(writing write: PostgresQuery, thenRead readBack: (_ written: PostgresQuery) -> [ReadBack]) async throws -> [PostgresRows] {
        Array(try await run(["select set_config('app.written', (\(write))::text, true)"], thenRead: readBack("current_setting('app.written')::uuid")).dropFirst())
    }

    /// Runs statements that only read, as the caller, and returns each one's rows.
    package func read(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        try await transaction(statements, placement: readPlacement)
    }

    package func read(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await read([statement])[0]
    }

    /// Reads as `read` does, but every statement, `authenticate()` included, sees one
    /// snapshot, on a connection of its own: for reads whose statements must agree with each
    /// other, such as the members a read names and the changes it reads, or a session found
    /// live and the changes read with it.
    package func readInOneSnapshot(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        try await transaction(statements, placement: .ownConnection, mode: .snapshotReadOnly)
    }

    /// Each of the caller's diaries with the rows of `statement` for it: their ids first,
    /// then one statement a diary in one round trip, each of which routes to the diary's
    /// shard on Citus, where one statement over all the caller's diaries would ask every
    /// shard, and fail when any worker is down.
    package func readEachDiary(_ statement: (UUID) -> PostgresQuery) async throws -> [(diary: UUID, rows: PostgresRows)] {
        let diaries = try await read("select diary_id from my_positions_at_join()").map { try $0.decode("diary_id", as: UUID.self) }
        guard !diaries.isEmpty else { return [] }
        return Array(zip(diaries, try await read(diaries.map(statement))))
    }

    /// Whether reads over several diaries go one statement a diary (`readEachDiary`): on a
    /// Citus coordinator. One PostgreSQL reads them in one statement, one round trip.
    package var readsDiaryByDiary: Bool { database == .citus }

    /// Runs `body` in one REPEATABLE READ, READ ONLY transaction as the caller, on a
    /// connection of its own: every read through `reader` sees one snapshot, however long
    /// `body` takes between them. It takes no locks beyond each statement's, so writers
    /// never wait for it. For exports, whose reads interleave with sending the response.
    package func snapshot<Result: Sendable>(_ body: (_ reader: SnapshotReader) async throws -> Result) async throws -> Result {
        try await AppSQLState.translating {
            try await pool.withConnection { connection in
                try await connection.query(PostgresConnection.TransactionMode.snapshotReadOnly.begin)
                let result: Result
                do {
                    try await connection.query("select authenticate(\(identity.sessionID), \(identity.userID))")
                    result = try await body(SnapshotReader(connection: connection))
                } catch {
                    _ = try? await connection.query("rollback")
                    throw error
                }
                try await connection.query("commit")
                return result
            }
        }
    }

    /// Reads inside `snapshot`.
    package struct SnapshotReader: Sendable {
        let connection: PostgresConnection

        package func read(_ statement: PostgresQuery) async throws -> PostgresRows {
            try await connection.query(statement)
        }

        /// Every row of a keyset-paginated read, a page per round trip: `statement` reads the
        /// `size` rows after `key` of the last row seen (nil for the first page).
        package func forEachRow<Key>(
            pagesOf size: Int, _ statement: (_ after: Key?) -> PostgresQuery, key: (PostgresRow) throws -> Key,
            _ body: (PostgresRow) async throws -> Void
        ) async throws {
            var after: Key?
            while true {
                let rows = try await read(statement(after))
                for row in rows {
                    try await body(row)
                    after = try key(row)
                }
                if rows.count < size { return }
            }
        }
    }

    private func transaction(
        _ statements: [PostgresQuery], placement: PostgresPool.Placement, mode: PostgresConnection.TransactionMode = .readCommitted,
        afterCommit: [PostgresQuery] = []
    ) async throws -> [PostgresRows] {
        let spelled = database == .citus ? statements.map(CitusSpelling.respelled) : statements
        let transaction = ["select authenticate(\(identity.sessionID), \(identity.userID))"] + spelled
        #if DEBUG
        Self.recorder?.record(transaction + (afterCommit.isEmpty ? [] : ["COMMIT"] + afterCommit))
        #endif
        var conflicts = Backoff.Attempts(Self.conflictRetry)
        while true {
            do {
                let results = try await AppSQLState.translating { try await pool.transaction(transaction, placement: placement, mode: mode, afterCommit: afterCommit) }
                return Array(results.dropFirst())
            } catch let error as PostgresError where Self.isConflict(error) && conflicts.failures + 1 < Self.conflictAttempts {
                Counter(label: "db_conflict_retries_total", dimensions: [("kind", "\(error.kind)")]).increment()
                try await Task.sleep(for: conflicts.failed())
            }
        }
    }

    /// A transaction the database chose as a deadlock's victim, or could not serialize, was
    /// rolled back whole, so it runs again, up to `conflictAttempts` times in all, before the
    /// caller hears `conflict_retry`. On a cluster a shard's move ends by blocking the shard's
    /// writes for a moment, and a write that meets that block in the wrong order is such a
    /// victim (CitusRebalanceTests).
    static func isConflict(_ error: PostgresError) -> Bool { error.kind == .deadlock || error.kind == .serializationFailure }
    static let conflictAttempts = 3
    static let conflictRetry = Backoff(base: .milliseconds(20), cap: .milliseconds(500), jitter: 0.5...1.0)

    #if DEBUG
    /// Debug builds only: a test collects the statements of each transaction a request
    /// sends (BEGIN aside; COMMIT only before what runs after it), to hold the benchmark's
    /// pgbench scripts to them.
    @TaskLocal package static var recorder: StatementRecorder?

    package final class StatementRecorder: Sendable {
        private let transactions = NIOLockedValueBox<[[PostgresQuery]]>([])

        package init() {}

        package func record(_ statements: [PostgresQuery]) { transactions.withLockedValue { $0.append(statements) } }
        package var recorded: [[PostgresQuery]] { transactions.withLockedValue { $0 } }
    }
    #endif
}
