import DiaryCore
import Foundation
import Logging
import PostgresClient

/// `migrate --citus`: the migrated schema laid out on a Citus cluster, through its coordinator.
///
/// Each diary's rows live on one shard: `diaries` is distributed by id and every table keyed by
/// diary_id by that column, co-located with it, so a diary's statements route to one worker.
/// Tables that are not per diary stay whole: reference tables (a copy on every node) where
/// they are read beside a diary's rows and written rarely, and tables on the coordinator
/// (citus local tables) where most requests write them, so that a write commits on one node.
/// Every step is skipped when already done, so a second run changes nothing.
struct CitusSchema {
    enum Placement: Equatable, Sendable {
        /// Sharded by `column`, co-located with `diaries`.
        case byDiary(column: String)
        /// A copy on every node.
        case reference
        /// On the coordinator only.
        case coordinator
    }

    /// Every table of the schema but the migrator's (`schema_migrations`, `schema_definitions`), in the order they are laid out.
    /// `user_diaries`, read by every request for the caller's diaries, is on the coordinator
    /// so that the read asks no worker. In order:
    /// reference tables before the distributed tables whose foreign keys point at them, and
    /// the coordinator's tables last, with everything their foreign keys reach.
    static let placements: [(table: String, placement: Placement)] = [
        ("users", .reference),
        ("profile_photos", .reference),
        ("diaries", .byDiary(column: "id")),
        ("diary_members", .byDiary(column: "diary_id")),
        ("entries", .byDiary(column: "diary_id")),
        ("entry_reads", .byDiary(column: "diary_id")),
        ("entry_photos", .byDiary(column: "diary_id")),
        ("change_log", .byDiary(column: "diary_id")),
        ("former_members", .byDiary(column: "diary_id")),
        ("invite_codes", .reference),
        ("questions", .reference),
        ("service_notices", .reference),
        ("devices", .reference),
        ("apple_tokens", .reference),
        ("sessions", .coordinator),
        ("refresh_tokens", .coordinator),
        ("push_outbox", .coordinator),
        ("reminder_schedule", .coordinator),
        ("photo_uploads", .coordinator),
        ("photo_upload_days", .coordinator),
        ("photo_garbage", .coordinator),
        ("export_days", .coordinator),
        ("billing_events", .coordinator),
        ("apple_notifications", .coordinator),
        ("apple_revocations", .coordinator),
        ("backup_runs", .coordinator),
        ("user_diaries", .coordinator),
    ]

    /// Citus refuses to lay out, or to add, any trigger unless this is on, because a trigger
    /// runs on a shard. The schema's triggers touch only their own row (CitusSchemaTests
    /// fails on any other), which a shard can do.
    static let rowGuardsAllowed: PostgresQuery = "set local citus.enable_unsafe_triggers = on"

    /// What each later migration's transaction runs with on a cluster: row guards allowed,
    /// and one connection a node, without which Citus refuses a transaction that changes a
    /// distributed function and then a distributed table (0027 did both).
    static let migrationSettings: [PostgresQuery] = [rowGuardsAllowed, "set local citus.multi_shard_modify_mode = 'sequential'"]

    enum Failure: Error, CustomStringConvertible {
        case noExtension
        case noWorkers
        case ownerNotServerMember
        case coordinatorHoldsShards

        var description: String {
            switch self {
            case .noExtension:
                "the citus extension is not installed in this database: as a superuser, CREATE EXTENSION citus here and on every worker, and register the workers (citus_add_node)"
            case .noWorkers:
                "no Citus worker is registered: add them with citus_add_node before migrate --citus"
            case .ownerNotServerMember:
                "diary_owner is not a member of diary_app on every node, which a write's answer needs on the workers (assume_server_role): run sql/roles.sql as a superuser in the application's database on the coordinator, or on each node"
            case .coordinatorHoldsShards:
                "the coordinator holds shards (pg_dist_node.shouldhaveshards for group 0): a write's answer cannot be read there as the caller; move them to the workers (select citus_set_node_property('<coordinator host>', <port>, 'shouldhaveshards', false), then rebalance)"
            }
        }
    }

    let pool: PostgresPool
    let logger: Logger

    /// Refuses before anything changes when the database is not a Citus coordinator with workers.
    func checkCluster() async throws {
        let rows = try await pool.query("select exists (select from pg_extension where extname = 'citus') as citus")
        guard try rows.first?.decode("citus", as: Bool.self) == true else { throw Failure.noExtension }
        let workers = try await pool.query("select count(*)::int8 as n from pg_dist_node where groupid <> 0 and noderole = 'primary' and isactive")
        guard try (workers.first?.decode("n", as: Int.self) ?? 0) > 0 else { throw Failure.noWorkers }
        // Every node: a role's memberships are each node's own, and a write's answer takes
        // diary_app's role on the diary's worker (assume_server_role).
        guard try await isMemberOnEveryNode("diary_owner", of: "diary_app") else { throw Failure.ownerNotServerMember }
        // The coordinator's own shards would be read inside the router's SECURITY DEFINER
        // function, where no role can be taken: every write of those diaries would fail.
        let coordinatorShards = try await pool.query("select exists (select from pg_dist_node where groupid = 0 and shouldhaveshards) as holds")
        guard try coordinatorShards.first?.decode("holds", as: Bool.self) == false else { throw Failure.coordinatorHoldsShards }
    }

    /// Whether `member` is a member of `role` on the coordinator and on every worker.
    func isMemberOnEveryNode(_ member: String, of role: String) async throws -> Bool {
        let rows = try await pool.query("""
            select bool_and(success and result = 't') as everywhere
            from run_command_on_all_nodes(format('select pg_has_role(%L, %L, %L)', \(member)::text, \(role)::text, 'member'))
            """)
        return try rows.first?.decode("everywhere", as: Bool?.self) == true
    }

    /// Grants every view's privileges again, which Citus then sends to every node. Citus
    /// creates a view on a worker without its grants, when it lays out the tables the view
    /// reads and when a worker is added, and a write's answer reads `member_profiles` there as
    /// diary_app (`diary_response`). `migrate --citus` and `rebalance` run it.
    func grantViewsOnEveryNode() async throws {
        let rows = try await pool.query("""
            select c.relname as view, a.privilege_type as privilege, g.rolname as grantee
            from pg_class c
            cross join lateral aclexplode(c.relacl) a
            join pg_roles g on g.oid = a.grantee
            where c.relnamespace = 'public'::regnamespace and c.relkind = 'v' and a.grantee <> c.relowner
            """)
        for row in rows {
            let view = try row.decode("view", as: String.self), grantee = try row.decode("grantee", as: String.self)
            let privilege = try row.decode("privilege", as: String.self)
            // Names from the catalog, spelled as the migrations spell every view and role.
            guard Self.isPlainIdentifier(view), Self.isPlainIdentifier(grantee), Self.viewPrivileges.contains(privilege) else {
                throw MigrationError(description: "the grant of \(privilege) on the view \(view) to \(grantee) cannot be sent to every node: grant it on each node by hand")
            }
            try await pool.query(PostgresQuery(unsafeSQL: "grant \(privilege) on public.\(view) to \(grantee)"))
        }
    }

    /// Respells every policy that selects an identity function once, `( SELECT app_user_id()
    /// AS app_user_id)`, as the plain call (`CitusSpelling`): Citus refuses subqueries in the
    /// policies of distributed tables. Returns how many.
    @discardableResult
    func respellPolicies() async throws -> Int {
        let rows = try await pool.query("""
            select policyname, tablename, qual, with_check from pg_policies
            where schemaname = 'public' and (qual like '%( SELECT %app_%' or with_check like '%( SELECT %app_%')
            """)
        for row in rows {
            let name = try row.decode("policyname", as: String.self), table = try row.decode("tablename", as: String.self)
            // Names from the catalog, spelled as the migrations spell every policy and table.
            guard Self.isPlainIdentifier(name), Self.isPlainIdentifier(table) else { preconditionFailure("unexpected name \(table).\(name)") }
            var clauses: [String] = []
            if let qual = try row.decode("qual", as: String?.self) { clauses.append("using (\(CitusSpelling.respelled(qual)))") }
            if let check = try row.decode("with_check", as: String?.self) { clauses.append("with check (\(CitusSpelling.respelled(check)))") }
            try await pool.query(PostgresQuery(unsafeSQL: "alter policy \(name) on public.\(table) \(clauses.joined(separator: " "))"))
        }
        if !rows.isEmpty { logger.info("migrate --citus: policies respelled without subqueries", metadata: ["count": "\(rows.count)"]) }
        return rows.count
    }

    /// A definition file's statement as the cluster takes it, or nil to skip it. Citus refuses
    /// a subquery in the policy of a distributed table, so a policy selects its identity
    /// function plainly (`CitusSpelling`); and its CREATE POLICY on a laid-out table cannot
    /// send every expression on to the shards (`IS TRUE` fails as "unrecognized node type"),
    /// where ALTER POLICY can: a policy that exists is altered in place, its DROP skipped.
    /// A policy's command, roles or kind therefore change on a cluster only by a migration.
    static func definitionStatement(_ statement: String, policyExists: (_ name: String, _ table: String) async throws -> Bool) async throws -> String? {
        let statement = String(MigrationFile.command(of: statement))
        let words = statement.split(whereSeparator: \.isWhitespace).prefix(7).map { $0.lowercased() }
        if words.starts(with: ["drop", "policy", "if", "exists"]) { return nil }
        guard words.starts(with: ["create", "policy"]), words.count >= 5, words[3] == "on" else { return statement }
        let spelled = CitusSpelling.respelled(statement)
        let name = words[2], table = words[4].hasPrefix("public.") ? String(words[4].dropFirst(7)) : words[4]
        guard isPlainIdentifier(name), isPlainIdentifier(table), try await policyExists(name, table) else { return spelled }
        // What follows the name and table, less AS, FOR and TO, which ALTER POLICY does not take.
        guard let clauses = spelled.firstRange(of: /(?i)\s(USING|WITH\s+CHECK)\s*\(/) else { return spelled }
        return "ALTER POLICY \(name) ON public.\(table)" + spelled[clauses.lowerBound...]
    }

    static let viewPrivileges: Set<String> = ["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"]

    static func isPlainIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5f }
    }

    /// What every session in this database runs with on a cluster, set on the database so
    /// that it needs no startup `options`, which PgBouncer refuses:
    /// - one connection a node in every transaction. A request writes `users`, a reference
    ///   table that tables sharded by diary point at, after reading shards, and Citus refuses
    ///   that write once a read has used several connections to a node ("there was a parallel
    ///   operation").
    /// - a connection to a worker given up after `workerConnectionTimeoutMilliseconds`, inside
    ///   the server's statement timeout (5 s by default): a worker that does not answer is then
    ///   a failed connection, 503, rather than a statement cancelled at its timeout, 504. Not
    ///   much less: 200 joins at once on a loaded 2-core machine took more than 2 s to open
    ///   their connections to a worker.
    static let sessionDefaults: PostgresQuery = """
        do $$ begin
            execute format('alter database %I set citus.multi_shard_modify_mode = %L', current_database(), 'sequential');
            execute format('alter database %I set citus.node_connection_timeout = %s', current_database(), \(unsafeRaw: String(workerConnectionTimeoutMilliseconds)));
        end $$
        """

    static let workerConnectionTimeoutMilliseconds = 4000

    /// Sets `sessionDefaults`; new sessions take it. Needs the database's owner.
    func setSessionDefaults() async throws {
        do {
            try await pool.query(Self.sessionDefaults)
        } catch let error as PostgresError {
            throw MigrationError(description: "setting the cluster's session defaults on the database failed (migrate --citus runs as the database's owner): \(Migrator.serverMessage(error))")
        }
    }

    /// Lays out every table not laid out yet; returns the tables it changed.
    @discardableResult
    func apply() async throws -> [String] {
        var changed: [String] = []
        for (table, placement) in Self.placements where try await isLaidOut(table) == false {
            let statement: PostgresQuery = switch placement {
            case .byDiary(let column) where table == "diaries":
                "select create_distributed_table(\(table)::regclass, \(column))"
            case .byDiary(let column):
                "select create_distributed_table(\(table)::regclass, \(column), colocate_with => 'diaries')"
            case .reference:
                "select create_reference_table(\(table)::regclass)"
            case .coordinator:
                "select citus_add_local_table_to_metadata(\(table)::regclass, cascade_via_foreign_keys => true)"
            }
            do {
                try await pool.withTransaction { connection in
                    // Else a reference table turns every local table that points at it into a
                    // coordinator table, which then can no longer be distributed by diary.
                    try await connection.query("set local citus.enable_local_reference_table_foreign_keys = off")
                    try await connection.query(Self.rowGuardsAllowed)
                    // The rows a live database has already are copied onto the shards: the
                    // guards let the copy through (refuse_direct_write), on every node.
                    try await connection.query("set local citus.propagate_set_commands = 'local'")
                    try await connection.query("set local app.writer = 'citus_layout'")
                    try await connection.query(statement)
                }
            } catch let error as PostgresError {
                throw MigrationError(description: "laying out \(table) (\(placement)) failed: \(Migrator.serverMessage(error))")
            }
            logger.info("migrate --citus: laid out", metadata: ["table": "\(table)", "placement": "\(placement)"])
            changed.append(table)
        }
        return changed
    }

    /// Whether `table` is laid out; nil while no migration has created it (migrations older
    /// than this release's layout), and the run after the one that does lays it out.
    private func isLaidOut(_ table: String) async throws -> Bool? {
        let rows = try await pool.query("""
            select to_regclass(\(table)) is not null as found,
                exists (select from pg_dist_partition where logicalrelid = to_regclass(\(table))) as done
            """)
        guard let row = rows.first, try row.decode("found", as: Bool.self) else { return nil }
        return try row.decode("done", as: Bool.self)
    }
}
