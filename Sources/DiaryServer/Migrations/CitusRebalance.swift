import Foundation
import Logging
import PostgresClient

/// `rebalance`: the shards spread over every worker registered with the coordinator, moved
/// while they stay writable (Citus's logical replication: a copy, then a catch-up of the
/// writes made meanwhile, then a brief block of the shard's writes while it switches over).
///
/// PostgreSQL 15 refuses to apply replicated changes into a table whose row security applies
/// to the applying role. Citus applies a move's catch-up as a role it makes for the move on
/// the receiving node (`citus_shard_move_subscription_role_<owner>_<operation>`), a member of
/// the tables' owner without BYPASSRLS, and the tables force row security: the catch-up fails,
/// and the rebalance never ends. So while the job runs, each such role gets BYPASSRLS as soon
/// as it appears, once Citus has made it NOSUPERUSER; its replication worker, which retries
/// after an error, then applies. That gives it nothing its owner lacks (`migrate` requires the
/// owner to have BYPASSRLS or be a superuser), and row security stays forced on every table
/// throughout: no table lock is taken, so the servers' statements never wait on one.
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

    func run() async throws -> Summary {
        let schema = CitusSchema(pool: pool, logger: logger)
        try await schema.checkCluster()
        guard try await pool.query("select rolsuper from pg_roles where rolname = current_user").first?.decode("rolsuper", as: Bool.self) == true else {
            throw Failure.notSuperuser
        }
        // A worker added since the last migrate has the views without their grants, and a
        // write's answer reads member_profiles on whichever worker its diary moves to.
        try await schema.grantViewsOnEveryNode()
        let started = ContinuousClock.now
        // force_logical: a shard whose table has no replica identity would otherwise be moved
        // with its writes blocked for the whole copy; every table here has a primary key.
        let job = try await pool.query("select citus_rebalance_start(shard_transfer_mode => 'force_logical') as job").first?.decode("job", as: Int?.self)
        guard let job else { return Summary(job: nil, moves: 0, seconds: 0) }
        logger.notice("rebalance: started", metadata: ["job": "\(job)"])
        var state = "scheduled"
        while !Self.endedStates.contains(state) {
            try await letSubscriptionRolesApply()
            state = try await pool.query("select state::text as state from pg_dist_background_job where job_id = \(job)").first?.decode("state", as: String.self) ?? "unknown"
            if !Self.endedStates.contains(state) { try await Task.sleep(for: Self.pollInterval) }
        }
        guard state == "finished" else { throw Failure.jobEnded(job: job, state: state) }
        let moves = try await pool.query("""
            select count(*)::int8 as moves from pg_dist_background_task where job_id = \(job) and command like '%citus_move_shard_placement%'
            """).first?.decode("moves", as: Int.self) ?? 0
        return Summary(job: job, moves: moves, seconds: (ContinuousClock.now - started).totalSeconds)
    }

    /// A job in any other state still has work to do, or is winding down to one of these.
    static let endedStates: Set<String> = ["finished", "cancelled", "failed", "unknown"]
    static let pollInterval: Duration = .milliseconds(250)

    /// Each node's subscription roles waiting for BYPASSRLS, granted it, and logged: rare
    /// (one per move), so the grant runs only when the cheap look finds one.
    func letSubscriptionRolesApply() async throws {
        let waiting = try await pool.query(Self.subscriptionRolesWaiting)
        guard !waiting.isEmpty else { return }
        for row in waiting {
            let node = try row.decode("nodeid", as: Int.self), roles = try row.decode("result", as: String.self)
            logger.notice("rebalance: a move's subscription role gets BYPASSRLS, so its catch-up applies into tables forcing row security", metadata: [
                "node": "\(node)", "roles": "\(roles)",
            ])
        }
        for failure in try await pool.query(Self.grantSubscriptionRolesBypass) {
            let node = try failure.decode("nodeid", as: Int.self), error = try failure.decode("result", as: String.self)
            logger.warning("rebalance: a subscription role's BYPASSRLS was not granted; trying again", metadata: [
                "node": "\(node)", "error": "\(error)",
            ])
        }
    }

    /// Citus's subscription roles for moves and splits that are members of a role with
    /// BYPASSRLS (or a superuser) and lack it themselves. One still SUPERUSER is left for the
    /// next look, so the grant never updates a role while Citus is altering it.
    static let waitingRoleCondition = """
        (m.rolname like 'citus\\_shard\\_move\\_subscription\\_role\\_%' or m.rolname like 'citus\\_shard\\_split\\_subscription\\_role\\_%')
        and not m.rolsuper and not m.rolbypassrls
        and exists (select 1 from pg_auth_members a join pg_roles o on o.oid = a.roleid where a.member = m.oid and (o.rolbypassrls or o.rolsuper))
        """

    static let subscriptionRolesWaiting = PostgresQuery(unsafeSQL: """
        select nodeid::int8 as nodeid, result from run_command_on_all_nodes($command$
            select coalesce(string_agg(m.rolname, ', '), '') from pg_roles m where \(waitingRoleCondition)
            $command$) where success and result <> ''
        """)

    /// The grant on every node, without propagation (each node's roles are its own here); a
    /// role dropped meanwhile is skipped. One row per node where it failed.
    static let grantSubscriptionRolesBypass = PostgresQuery(unsafeSQL: """
        select nodeid::int8 as nodeid, result from run_command_on_all_nodes($command$
            do $grant$
            declare role_name text;
            begin
                perform set_config('citus.enable_ddl_propagation', 'off', true);
                for role_name in select m.rolname from pg_roles m where \(waitingRoleCondition) loop
                    begin
                        execute format('alter role %I bypassrls', role_name);
                    exception when undefined_object then
                        null;
                    end;
                end loop;
            end
            $grant$
            $command$) where not success
        """)

    enum Failure: Error, CustomStringConvertible {
        case jobEnded(job: Int, state: String)
        case notSuperuser

        var description: String {
            switch self {
            case .jobEnded(let job, let state):
                "rebalance job \(job) ended \(state): see pg_dist_background_task for its tasks' messages; running rebalance again resumes"
            case .notSuperuser:
                "rebalance runs as a superuser (--database-url): only a superuser may grant Citus's subscription roles BYPASSRLS, which the moves' catch-up needs"
            }
        }
    }
}
