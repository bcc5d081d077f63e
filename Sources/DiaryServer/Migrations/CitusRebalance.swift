import Foundation
import Logging
import PostgresClient

/// `rebalance`: the shards spread over every worker registered with the coordinator, moved
/// while they stay writable (Citus's logical replication: a copy, then a catch-up of the
/// writes made meanwhile, then a brief block of the shard's writes while it switches over).
///
/// PostgreSQL 15 refuses to apply replicated changes into a table whose row security applies
/// to the applying role, and Citus applies them as a role of its own, a member of the tables'
/// owner without BYPASSRLS: with row security forced, every move's catch-up fails, and the
/// rebalance never ends. So the tables' row security is unforced for the move and forced again
/// after it, whatever happened. Unforced, row security still applies to everyone it applies to
/// today: the server's role owns nothing, and the owner has BYPASSRLS, which forcing never
/// overrides; only the owner's members without it (Citus's subscription roles) skip it.
struct CitusRebalance {
    let pool: PostgresPool
    let logger: Logger

    struct Summary: Sendable, CustomStringConvertible {
        var job: Int?
        var moves: Int
        var seconds: Double

        var description: String {
            guard let job else { return "the shards are balanced already: nothing moved" }
            return "rebalance job \(job): \(moves) shard group\(moves == 1 ? "" : "s") moved in \(String(format: "%.1f", seconds)) s"
        }
    }

    /// The public tables with row security enabled: every one of them forces it (the migrations do).
    static let protectedTables: PostgresQuery = """
        select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' and c.relrowsecurity order by c.relname
        """

    func run() async throws -> Summary {
        try await CitusSchema(pool: pool, logger: logger).checkCluster()
        let tables = try await pool.query(Self.protectedTables).map { try $0.decode("relname", as: String.self) }
        let started = ContinuousClock.now
        let summary: Result<Summary, any Error>
        do {
            try await setForced(false, on: tables, within: Self.unforceLimit)
            summary = .success(try await rebalance(started: started))
        } catch {
            summary = .failure(error)
        }
        do {
            try await setForced(true, on: tables, within: Self.forceAgainLimit)
        } catch {
            let unforced = try? await pool.query(Self.unforcedTables).map { try $0.decode("relname", as: String.self) }
            logger.critical("rebalance: row security is not forced again", metadata: ["tables": "\(unforced ?? tables)", "error": "\(error)"])
            throw Failure.notForcedAgain(tables: unforced ?? tables, error: "\(error)")
        }
        return try summary.get()
    }

    private func rebalance(started: ContinuousClock.Instant) async throws -> Summary {
        // force_logical: a shard whose table has no replica identity would otherwise be moved
        // with its writes blocked for the whole copy; every table here has a primary key.
        let job = try await pool.query("select citus_rebalance_start(shard_transfer_mode => 'force_logical') as job").first?.decode("job", as: Int?.self)
        guard let job else { return Summary(job: nil, moves: 0, seconds: 0) }
        logger.notice("rebalance: started", metadata: ["job": "\(job)"])
        try await pool.query("select citus_rebalance_wait()")
        let rows = try await pool.query("""
            select j.state::text as state, count(t.task_id) filter (where t.command like '%citus_move_shard_placement%')::int8 as moves
            from pg_dist_background_job j left join pg_dist_background_task t on t.job_id = j.job_id
            where j.job_id = \(job) group by j.state
            """)
        let state = try rows.first?.decode("state", as: String.self) ?? "unknown"
        guard state == "finished" else { throw Failure.jobEnded(job: job, state: state) }
        let moves = try rows.first?.decode("moves", as: Int.self) ?? 0
        return Summary(job: job, moves: moves, seconds: (ContinuousClock.now - started).totalSeconds)
    }

    /// Each table's ALTER takes its lock for a moment, on the coordinator and every shard,
    /// behind the transactions using it, and every new one queues behind the ALTER while it
    /// waits: so it gives up after `lockTimeout` on every node and tries again after a backoff,
    /// for as long as `limit` allows. The timeout is a SET LOCAL that Citus passes on to the
    /// workers (`citus.propagate_set_commands`): without it the ALTER waited on a worker with no
    /// limit, in a cycle with a server's transaction that waited for the coordinator's lock,
    /// until Citus's deadlock detection ended it two seconds later.
    func setForced(_ forced: Bool, on tables: [String], within limit: Duration) async throws {
        let deadline = ContinuousClock.now + limit
        for table in tables {
            // Names from the catalog, spelled as the migrations spell every table.
            guard CitusSchema.isPlainIdentifier(table) else { preconditionFailure("unexpected table name \(table)") }
            let alter = PostgresQuery(unsafeSQL: "alter table public.\(table) \(forced ? "force" : "no force") row level security")
            var attempts = Backoff.Attempts(Self.lockRetry)
            while true {
                do {
                    try await pool.withTransaction { connection in
                        try await connection.query("set local citus.propagate_set_commands = 'local'")
                        try await connection.query(PostgresQuery(unsafeSQL: "set local lock_timeout = '\(Self.lockTimeout)'"))
                        try await connection.query(alter)
                    }
                    break
                } catch let error as PostgresError where error.kind == .deadlock || error.kind == .lockNotAvailable {
                    let wait = attempts.failed()
                    guard ContinuousClock.now + wait < deadline else { throw error }
                    logger.notice("rebalance: a table's lock was not free; trying again", metadata: ["table": "\(table)", "error": "\(error.kind)", "attempt": "\(attempts.failures)"])
                    try await Task.sleep(for: wait)
                }
            }
        }
        logger.notice("rebalance: row security \(forced ? "forced again" : "unforced for the moves")", metadata: ["tables": "\(tables.count)"])
    }

    /// The tables whose row security is enabled and not forced: none, outside a rebalance.
    static let unforcedTables: PostgresQuery = """
        select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' and c.relrowsecurity and not c.relforcerowsecurity order by c.relname
        """

    static let lockTimeout = "500ms"
    static let lockRetry = Backoff(base: .milliseconds(100), cap: .seconds(2), jitter: 0.5...1.0)
    /// Unforcing gives up sooner: nothing has moved yet, and running again starts over.
    static let unforceLimit: Duration = .seconds(60)
    /// Forcing again outlasts a busy minute or two of the servers' writes: each try holds up
    /// their statements on one table for at most `lockTimeout`.
    static let forceAgainLimit: Duration = .seconds(600)

    enum Failure: Error, CustomStringConvertible {
        case jobEnded(job: Int, state: String)
        case notForcedAgain(tables: [String], error: String)

        var description: String {
            switch self {
            case .jobEnded(let job, let state):
                "rebalance job \(job) ended \(state): see pg_dist_background_task for its tasks' messages; running rebalance again resumes"
            case .notForcedAgain(let tables, let error):
                """
                row security is NOT forced on \(tables.joined(separator: ", ")) (\(error)): the server's \
                role is still refused by row security, but run `diary-server rebalance` again now, \
                which forces it again, or, as the schema's owner, `alter table <name> force row \
                level security` for each
                """
            }
        }
    }
}
