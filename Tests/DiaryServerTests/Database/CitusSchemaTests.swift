import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryServer

/// What keeps the schema distributable by diary, checked on a single PostgreSQL from its
/// catalog: CI has no Citus. `make test-citus` lays it out on a real cluster.
@Suite("The schema, laid out for Citus")
struct CitusSchemaTests {
    @Test("the layout names every table once, and every key of a table sharded by diary holds its diary column")
    func layoutCoversTheSchema() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("""
                    select c.relname as name,
                        array(select pg_get_constraintdef(k.oid) from pg_constraint k where k.conrelid = c.oid and k.contype in ('p', 'u', 'x')
                              order by 1) as keys
                    from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and c.relname not in ('schema_migrations', 'schema_definitions')
                    """)
            }
            let tables = try Dictionary(uniqueKeysWithValues: rows.map { (try $0.decode("name", as: String.self), try $0.decodeAggregate("keys", as: String.self)) })
            let laidOut = CitusSchema.placements.map(\.table)
            #expect(Set(laidOut) == Set(tables.keys), "tables without a placement, or placements without a table")
            #expect(Set(laidOut).count == laidOut.count)
            for (table, placement) in CitusSchema.placements {
                guard case .byDiary(let column) = placement else { continue }
                for key in tables[table] ?? [] {
                    let columns = key.drop { $0 != "(" }.prefix { $0 != ")" }.dropFirst().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    #expect(columns.contains(column), "\(table): \(key) lacks \(column); Citus refuses it")
                }
            }
        }
    }

    @Test("every policy, respelled for Citus, holds no subquery, and a single PostgreSQL keeps the once-a-statement spelling")
    func policiesRespelled() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("select policyname, coalesce(qual, '') as qual, coalesce(with_check, '') as checked from pg_policies where schemaname = 'public'")
            }
            var respelled = 0
            for row in rows {
                let name = try row.decode("policyname", as: String.self)
                for expression in [try row.decode("qual", as: String.self), try row.decode("checked", as: String.self)] {
                    #expect(!CitusSpelling.respelled(expression).uppercased().contains("SELECT"), "\(name): \(expression)")
                    if CitusSpelling.respelled(expression) != expression { respelled += 1 }
                }
            }
            #expect(respelled > 0, "the schema's own spelling uses the subquery, which the respelling removes")
        }
    }

    /// Triggers that touch only their own row, which Citus runs on a shard.
    static let rowGuards: Set<String> = ["set_updated_at", "forbid_key_change", "forbid_diary_type_change", "refuse_direct_write"]

    @Test("every trigger touches only its row: the side effects are the writing functions', which Citus runs on the coordinator, and a row guard runs on a shard")
    func onlyRowGuards() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("""
                    select c.relname || '.' || t.tgname as name, p.proname::text as function from pg_trigger t
                    join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
                    where not t.tgisinternal and c.relnamespace = 'public'::regnamespace
                    """)
            }
            let effects = try rows.filter { try !Self.rowGuards.contains($0.decode("function", as: String.self)) }.map { try $0.decode("name", as: String.self) }
            #expect(effects.isEmpty, "triggers with effects beyond their row, which Citus cannot run: \(effects.sorted())")
            #expect(rows.count > 10, "the guards are there")
        }
    }

    /// The change log's order holds on every node only because each change takes its
    /// position on the diary's row (migration 0027): a function that appended to the log
    /// itself could write a position out of turn.
    @Test("only log_change_at appends to the change log, and only log_change and post_entry_as call it, after taking the diary's position")
    func changesTakeTheirDiarysPosition() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("""
                    select p.proname::text as name,
                        p.prosrc ~* 'insert\\s+into\\s+change_log' as appends,
                        p.prosrc ~* 'log_change_at\\s*\\(' as calls,
                        p.prosrc ~* 'change_position\\s*=\\s*d\\.change_position\\s*\\+\\s*1' as takes_position
                    from pg_proc p where p.pronamespace = 'public'::regnamespace
                    """)
            }
            var appenders: [String] = [], callers: [String] = [], takers: [String] = []
            for row in rows {
                let name = try row.decode("name", as: String.self)
                if try row.decode("appends", as: Bool.self) { appenders.append(name) }
                if try row.decode("calls", as: Bool.self), name != "log_change_at" { callers.append(name) }
                if try row.decode("takes_position", as: Bool.self) { takers.append(name) }
            }
            #expect(appenders == ["log_change_at"])
            #expect(callers.sorted() == ["log_change", "post_entry_as"])
            #expect(takers.sorted() == ["log_change", "post_entry_as"])
        }
    }

    @Test("every writer a guard lets through is set, with set_app_setting, by a function")
    func guardsNameRealWriters() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("""
                    select c.relname || '.' || t.tgname as name, writer,
                        exists (select 1 from pg_proc p where p.pronamespace = 'public'::regnamespace
                                and p.prosrc like '%set_app_setting(''app.writer'', ''' || writer || ''')%') as set_somewhere
                    from pg_trigger t join pg_class c on c.oid = t.tgrelid,
                        unnest(string_to_array(rtrim(encode(t.tgargs, 'escape'), '\\000'), '\\000')) as writer
                    where t.tgfoid = 'refuse_direct_write'::regproc
                    """)
            }
            #expect(rows.count >= 13)
            for row in rows where try !row.decode("set_somewhere", as: Bool.self) {
                Issue.record("\(try row.decode("name", as: String.self)) lets through \(try row.decode("writer", as: String.self)), which no function sets")
            }
        }
    }

    @Test("the writer a guarded table looks for is set with set_app_setting, which reaches a worker's shard; set_config stays on the coordinator")
    func writerReachesEveryNode() async throws {
        try await MigratedTemplate.withDatabase { database in
            let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("""
                    select p.proname::text as name, p.prosrc like '%set_config(''app.writer''%' as by_set_config from pg_proc p
                    where p.pronamespace = 'public'::regnamespace and p.prosrc like '%app.writer%' and p.proname <> 'refuse_direct_write'
                    """)
            }
            #expect(rows.count >= 2, "post_entry_as and mark_as_read_as set the writer")
            for row in rows {
                let name = try row.decode("name", as: String.self)
                #expect(try !row.decode("by_set_config", as: Bool.self), "\(name) sets app.writer with set_config")
            }
        }
    }

    @Test("migrate --citus on a PostgreSQL without the citus extension refuses before it changes anything, and says why")
    func refusedWithoutCitus() async throws {
        try await TestDatabase.with { database in
            let owner = try ServerProcess.url(of: database.as(TestDatabase.ownerRole))
            let run = try await ServerProcess.runCommand(["migrate", "--citus", "--database-url", owner])
            #expect(run.status == 1)
            #expect(run.output.contains("the citus extension is not installed"), "\(run.output)")
            let migrated = try await TestDatabase.withPool(database, size: 1) { pool in
                try await pool.query("select to_regclass('public.schema_migrations') is not null as made").first?.decode("made", as: Bool.self)
            }
            #expect(migrated == false, "nothing is applied")
        }
    }

    @Test("a definition file's policies reach the cluster as it takes them: an existing one altered, its DROP skipped, a new one created, each respelled")
    func definitionPoliciesOnCitus() async throws {
        let drop = "-- Policies\n\nDROP POLICY IF EXISTS users_select ON public.users"
        let create = "CREATE POLICY users_select ON public.users FOR SELECT USING (((id = ANY (( SELECT public.app_visible_user_ids() AS app_visible_user_ids)::uuid[])) IS TRUE))"
        let skipped = try await CitusSchema.definitionStatement(drop) { _, _ in true }
        #expect(skipped == nil)
        let altered = try await CitusSchema.definitionStatement(create) { name, table in name == "users_select" && table == "users" }
        #expect(altered == "ALTER POLICY users_select ON public.users USING (((id = ANY (public.app_visible_user_ids()::uuid[])) IS TRUE))")
        let created = try await CitusSchema.definitionStatement(create) { _, _ in false }
        #expect(created == "CREATE POLICY users_select ON public.users FOR SELECT USING (((id = ANY (public.app_visible_user_ids()::uuid[])) IS TRUE))")
        let function = "-- Functions\nCREATE OR REPLACE FUNCTION public.f() RETURNS int LANGUAGE sql AS $$ select (select app_user_id()) $$"
        let untouched = try await CitusSchema.definitionStatement(function) { _, _ in true }
        #expect(untouched == String(MigrationFile.command(of: function)))
    }
}
