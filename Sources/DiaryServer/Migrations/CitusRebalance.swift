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
        try await setForced(false, on: tables)
        let summary: Summary
        do {
            summary = try await rebalance(started: started)
        } catch {
            try? await setForced(true, on: tables)
            throw error
        }
        try await setForced(true, on: tables)
        return summary
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
    /// waits: so it gives up after `lockTimeout` (or when the cluster finds it in a deadlock
    /// with the servers' writes, which lock several tables) and tries again after a backoff.
    private func setForced(_ forced: Bool, on tables: [String]) async throws {
        for table in tables {
            // Names from the catalog, spelled as the migrations spell every table.
            guard CitusSchema.isPlainIdentifier(table) else { preconditionFailure("unexpected table name \(table)") }
            let alter = PostgresQuery(unsafeSQL: "alter table public.\(table) \(forced ? "force" : "no force") row level security")
            var attempts = Backoff.Attempts(Self.lockRetry)
            while true {
                do {
                    try await pool.withTransaction { connection in
                        try await connection.query("select set_config('lock_timeout', \(Self.lockTimeout), true)")
                        try await connection.query(alter)
                    }
                    break
                } catch let error as PostgresError where (error.kind == .deadlock || error.kind == .lockNotAvailable) && attempts.failures < Self.lockAttempts {
                    let wait = attempts.failed()
                    logger.notice("rebalance: a table's lock was not free; trying again", metadata: ["table": "\(table)", "error": "\(error.kind)", "attempt": "\(attempts.failures)"])
                    try await Task.sleep(for: wait)
                }
            }
        }
        logger.notice("rebalance: row security \(forced ? "forced again" : "unforced for the moves")", metadata: ["tables": "\(tables.count)"])
    }

    static let lockTimeout = "500ms"
    static let lockAttempts = 20
    static let lockRetry = Backoff(base: .milliseconds(100), cap: .seconds(2), jitter: 0.5...1.0)

    enum Failure: Error, CustomStringConvertible {
        case jobEnded(job: Int, state: String)

        var description: String {
            switch self {
            case .jobEnded(let job, let state):
                "rebalance job \(job) ended \(state): see pg_dist_background_task for its tasks' messages; running rebalance again resumes"
            }
        }
    }
}
