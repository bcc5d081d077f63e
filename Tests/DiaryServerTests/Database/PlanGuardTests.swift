import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// The met cost goals, held in `make test`: every everyday statement costs the same whatever
/// the length of a diary's history, under every plan PostgreSQL may run it with. Two family
/// diaries alike but for their length (20 and 20,000 entries) are read and written by the
/// statements the repositories send, among `others` small couple diaries as a running service
/// holds them, each statement prepared and executed under EXPLAIN (ANALYZE, BUFFERS) as the
/// caller: with the plan cache forced generic, the plan a prepared statement switches to after
/// five executions, whose estimate for `diary_id = $n` is the table's rows over its diaries
/// (every diary looks small to it), and forced custom; with statistics taken before the long
/// diary grew (stale, autovacuum off) and after ANALYZE. The long diary's shared buffers must
/// stay within 1.2× the short one's, and so must its largest loop count: a node run once per
/// entry of the diary is a plan driven by the history, not by the page. Buffers and loops, not
/// time: they do not depend on the load of the machine, so the test holds on a loaded one.
@Suite("Plans stay history-independent")
struct PlanGuardTests {
    static let short = 20
    static let long = 20_000
    static let allowedRatio = 1.2
    /// Small diaries written before the statistics are taken, as on a server that has run a
    /// while: couple diaries of two entries each.
    static let others = 400

    /// The two ways a prepared statement is planned: PostgreSQL picks one per execution.
    enum PlanCache: String, CaseIterable, CustomStringConvertible {
        case generic = "force_generic_plan"
        case custom = "force_custom_plan"
        var description: String { self == .generic ? "generic plan" : "custom plan" }
    }

    /// Ids derived from text, as Benchmarks/growth/seed.sql names its rows.
    static func id(_ text: String) -> PostgresQuery { "md5(\(text))::uuid" }

    struct Diary {
        var entries: Int
        var diary: UUID
        var user: UUID
        var session: UUID
        /// The 11th entry from the oldest, by the partner, which the user has read.
        var eleventh: UUID
        var eleventhCreatedAt: String
        /// The newest entry, by the partner, which the user has not read.
        var unread: UUID
    }

    /// A family diary of `entries` entries, the measuring user its owner writing one in ten,
    /// the partner the rest, a minute apart; the partner reads all of the user's, the user a
    /// quarter of the partner's (k % 4 = 1) and the newest 20, as growth/seed.sql does.
    static func seed(_ pool: PostgresPool, size: Int, entries: Int) async throws -> Diary {
        let tag = "plan-\(size)"
        try await pool.query("""
            select add_user(md5(\(tag) || '-m')::uuid, 'measuring'), add_user(md5(\(tag) || '-p')::uuid, 'partner')
            """)
        try await pool.query("insert into sessions (id, user_id) values (md5(\(tag) || '-s')::uuid, md5(\(tag) || '-m')::uuid)")
        try await pool.query("""
            select create_diary_as(md5(\(tag) || '-m')::uuid, md5(\(tag) || '-d')::uuid, 'plan', 'family', null, now() - interval '1 year')
            """)
        try await pool.query("select add_diary_member(md5(\(tag) || '-d')::uuid, md5(\(tag) || '-p')::uuid, 'member', now() - interval '1 year')")
        // A thousand at a time, a transaction each, so the counters' old row versions are pruned as it goes.
        for first in stride(from: 1, through: entries, by: 1000) {
            let last = min(entries, first + 999)
            try await pool.query("""
                select count(post_entry_as(md5(\(tag) || case when k % 10 = 0 then '-m' else '-p' end)::uuid, md5(\(tag) || '-d')::uuid,
                    md5(\(tag) || '-e-' || k)::uuid, '今日の日記 ' || k, created_at => now() - make_interval(mins => \(entries)::integer - k + 1)))
                from generate_series(\(first)::integer, \(last)::integer) as k
                """)
            try await pool.query("""
                select count(mark_as_read_as(md5(\(tag) || case when k % 10 = 0 then '-p' else '-m' end)::uuid, md5(\(tag) || '-d')::uuid,
                    md5(\(tag) || '-e-' || k)::uuid))
                from generate_series(\(first)::integer, \(last)::integer) as k
                where k % 10 = 0 or k % 4 = 1 or k > \(entries)::integer - 20
                """)
        }
        try await pool.query("""
            select post_entry_as(md5(\(tag) || '-p')::uuid, md5(\(tag) || '-d')::uuid, md5(\(tag) || '-e-unread')::uuid, '未読の日記')
            """)
        let row = try #require(try await pool.query("""
            select md5(\(tag) || '-d')::uuid as diary, md5(\(tag) || '-e-unread')::uuid as unread, md5(\(tag) || '-m')::uuid as user_id, md5(\(tag) || '-s')::uuid as session,
                e.id as eleventh, e.created_at::text as eleventh_at
            from entries e where e.id = md5(\(tag) || '-e-11')::uuid
            """).first)
        return Diary(
            entries: entries, diary: try row.decode("diary"), user: try row.decode("user_id"), session: try row.decode("session"),
            eleventh: try row.decode("eleventh"), eleventhCreatedAt: try row.decode("eleventh_at"), unread: try row.decode("unread"))
    }

    /// `count` couple diaries of two entries each, one read, set-based: the many small diaries
    /// beside which a generic plan's estimate for one diary is a couple of rows.
    static func seedOthers(_ pool: PostgresPool, count: Int) async throws {
        try await pool.query("""
            select count(add_user(md5('other-' || k || '-' || who)::uuid, 'other'))
            from generate_series(1, \(count)::integer) as k, unnest(array['a', 'b']) as who
            """)
        try await pool.query("""
            select count(create_diary_as(md5('other-' || k || '-a')::uuid, md5('other-' || k || '-d')::uuid, 'other', 'couple', null, now() - interval '1 month'))
            from generate_series(1, \(count)::integer) as k
            """)
        try await pool.query("""
            select count(add_diary_member(md5('other-' || k || '-d')::uuid, md5('other-' || k || '-b')::uuid, 'member', now() - interval '1 month'))
            from generate_series(1, \(count)::integer) as k
            """)
        try await pool.query("""
            select count(post_entry_as(md5('other-' || k || '-' || who)::uuid, md5('other-' || k || '-d')::uuid,
                md5('other-' || k || '-e-' || who)::uuid, '今日の日記', created_at => now() - interval '1 day'))
            from generate_series(1, \(count)::integer) as k, unnest(array['a', 'b']) as who
            """)
        try await pool.query("""
            select count(mark_as_read_as(md5('other-' || k || '-b')::uuid, md5('other-' || k || '-d')::uuid, md5('other-' || k || '-e-a')::uuid))
            from generate_series(1, \(count)::integer) as k
            """)
    }

    /// The everyday statements, as the repositories spell them, each request's statements together.
    static func requests(_ diary: Diary, position: Int64, today: EntryRepository.Day) -> [(name: String, statements: [PostgresQuery], writes: Bool)] {
        let cursor = EntryRepository.Cursor(createdAt: diary.eleventhCreatedAt, id: diary.eleventh)
        return [
            ("home list", DiaryRepository.listStatements, false),
            ("a diary", DiaryRepository.findStatements(diary.diary), false),
            ("the timeline's first page", EntryRepository.timelineStatements(of: diary.diary, limit: 20, before: nil), false),
            ("a later page", EntryRepository.timelineStatements(of: diary.diary, limit: 5, before: cursor), false),
            ("the calendar's day", EntryRepository.timelineStatements(of: diary.diary, limit: 20, before: nil, on: today), false),
            ("an entry", [EntryRepository.findStatement(diary.eleventh, in: diary.diary)], false),
            // A first read, each time: every run is rolled back.
            ("mark read", EntryRepository.markReadStatements(diary.unread, in: diary.diary), true),
            ("post", EntryRepository.postStatements(UUID(), in: diary.diary, content: "新しい日記", question: nil, photoIDs: [])
                + [EntryRepository.readBack(UUID(), in: diary.diary).spelled(for: .single)], true),
            ("the realtime read", [ChangeLogRepository.changesStatement(inDiary: diary.diary, after: position - 5, limit: 100, on: .single)], false),
            ("the fan-out's read", [ChangeLogRepository.changesStatement(inDiary: diary.diary, after: position - 5, limit: 100, subjects: .entries, on: .single)], false),
            ("delta sync's page", ChangeLogRepository.deltaStatements(named: [diary.diary], after: ChangeCursor(positions: [diary.diary: position - 5]), limit: 100, on: .single), false),
            ("the data-safety summary", [DataSafetyRepository.summaryStatement, DepartureRepository.listStatement(window: .seconds(30 * 86_400))], false),
        ]
    }

    /// Each statement's plan, executed as the caller in a transaction that is rolled back:
    /// prepared, then executed under `cache`'s plan, as a prepared statement of the server's
    /// pool runs.
    static func plans(_ app: PostgresPool, _ diary: Diary, _ statements: [PostgresQuery], cache: PlanCache) async throws -> [[String: Any]] {
        let texts = try await app.withConnection { connection in
            try await connection.query("begin")
            do {
                try await connection.query("select authenticate(\(diary.session), \(diary.user))")
                try await connection.query(PostgresQuery(unsafeSQL: "set local plan_cache_mode = \(cache.rawValue)"))
                var texts: [String] = []
                for statement in statements {
                    let (prepare, execute) = try Self.prepared(statement, as: "plan_guard")
                    try await connection.query(prepare)
                    let explained = PostgresQuery(unsafeSQL: "explain (analyze, verbose, buffers, format json) " + execute)
                    let text = try #require(try await connection.query(explained).first?.decode("QUERY PLAN", as: String.self))
                    // The plan asked for: a custom plan spells the bound ids, a generic one never does.
                    if let id = statement.bindings.values.compactMap({ $0 }).first(where: { UUID(uuidString: $0) != nil }) {
                        #expect(text.contains(id) == (cache == .custom), "\(cache) of \(statement.sql.prefix(120))")
                    }
                    texts.append(text)
                    try await connection.query("deallocate plan_guard")
                }
                try await connection.query("rollback")
                return texts
            } catch {
                _ = try? await connection.query("rollback")
                _ = try? await connection.query("deallocate plan_guard")
                throw error
            }
        }
        return try texts.map { text in
            let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            return try #require(json.first?["Plan"] as? [String: Any])
        }
    }

    /// `prepare name(types) as sql` and `execute name(values)`, the values as quoted literals
    /// of the binds' text (every bind is sent as text).
    static func prepared(_ statement: PostgresQuery, as name: String) throws -> (prepare: PostgresQuery, execute: String) {
        let typeNames: [UInt32: String] = [
            0: "unknown", 16: "boolean", 17: "bytea", 20: "bigint", 23: "integer", 25: "text", 114: "json", 701: "double precision",
            1009: "text[]", 1184: "timestamptz", 1185: "timestamptz[]", 1186: "interval", 2950: "uuid", 2951: "uuid[]", 3802: "jsonb",
        ]
        let types = try statement.bindings.types.map { type in try #require(typeNames[type.oid], "no name for \(type)") }
        let values = statement.bindings.values.map { value in value.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "null" }
        let parameters = { (list: [String]) in list.isEmpty ? "" : "(" + list.joined(separator: ", ") + ")" }
        return (PostgresQuery(unsafeSQL: "prepare \(name)\(parameters(types)) as \(statement.sql)"), "execute \(name)\(parameters(values))")
    }

    static func buffers(_ plan: [String: Any]) -> Int {
        ((plan["Shared Hit Blocks"] as? Int) ?? 0) + ((plan["Shared Read Blocks"] as? Int) ?? 0)
    }

    static func nodes(_ plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap(nodes)
    }

    /// What one request's statements cost under one plan: shared buffers, and the largest
    /// loop count of any node.
    struct Cost: CustomStringConvertible {
        var buffers: Int
        var loops: Int
        var description: String { "\(buffers) shared buffers, at most \(loops) loops" }
    }

    /// Each request's cost, the second of two runs (the first warms the caches).
    static func costs(_ app: PostgresPool, _ diary: Diary, cache: PlanCache) async throws -> [String: Cost] {
        let (read, today) = try await app.withConnection { connection in
            try await connection.query("begin")
            try await connection.query("select authenticate(\(diary.session), \(diary.user))")
            let rows = try await connection.query(ChangeLogRepository.positionStatement(ofDiary: diary.diary))
            let day = try await connection.query("select to_char(now() at time zone time_zone, 'YYYY-MM-DD') as today from users where id = \(diary.user)")
            try await connection.query("rollback")
            return try (rows.first?.decode("change_position", as: Int64.self), day.first?.decode("today", as: String.self))
        }
        let position = try #require(read)
        let day = try #require(today.flatMap(EntryRepository.Day.init))
        var costs: [String: Cost] = [:]
        for request in requests(diary, position: position, today: day) {
            _ = try await plans(app, diary, request.statements, cache: cache)
            let plans = try await plans(app, diary, request.statements, cache: cache)
            costs[request.name] = Cost(
                buffers: plans.map(buffers).reduce(0, +),
                loops: plans.flatMap(nodes).map { ($0["Actual Loops"] as? Int) ?? 0 }.max() ?? 0)
        }
        return costs
    }

    static func expectIndependent(_ short: [String: Cost], _ long: [String: Cost], _ cache: PlanCache, statistics: String) {
        for (name, shortCost) in short.sorted(by: { $0.key < $1.key }) {
            let longCost = long[name] ?? Cost(buffers: .max, loops: .max)
            #expect(Double(longCost.buffers) <= Double(shortCost.buffers) * allowedRatio && Double(longCost.loops) <= Double(shortCost.loops) * allowedRatio,
                    "\(name), \(cache), statistics \(statistics): \(longCost) at \(Self.long) entries against \(shortCost) at \(Self.short)")
        }
    }

    @Test("every everyday statement costs the same at 20 and at 20,000 entries among 400 small diaries, under generic and custom plans, with stale statistics and fresh")
    func historyIndependent() async throws {
        try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { admin in
                // Statistics taken only when asked: the stale case is the long diary grown after them.
                for table in ["diaries", "diary_members", "user_diaries", "entries", "entry_reads", "entry_photos", "change_log"] {
                    try await admin.query(PostgresQuery(unsafeSQL: "alter table \(table) set (autovacuum_enabled = false)"))
                }
                let short = try await Self.seed(admin, size: 1, entries: Self.short)
                try await Self.seedOthers(admin, count: Self.others)
                try await admin.query("analyze")
                let long = try await Self.seed(admin, size: 2, entries: Self.long)
                try await TestDatabase.withPool(database.as(TestDatabase.appRole), size: 1) { app in
                    for statistics in ["stale", "fresh"] {
                        if statistics == "fresh" { try await admin.query("vacuum analyze") }
                        for cache in PlanCache.allCases {
                            Self.expectIndependent(try await Self.costs(app, short, cache: cache), try await Self.costs(app, long, cache: cache), cache, statistics: statistics)
                        }
                    }

                    // The socket's read of the log, and the fan-out's: a range of its index from
                    // where the read begins, in the index's order; nothing sorted but the page.
                    let position = try #require(try await admin.query("select change_position from diaries where id = \(long.diary)").first?.decode("change_position", as: Int64.self))
                    let limit = 100
                    for subjects in [ChangeLogRepository.Subjects.all, .entries] {
                        for cache in PlanCache.allCases {
                            let statement = ChangeLogRepository.changesStatement(inDiary: long.diary, after: position - 5, limit: limit, subjects: subjects, on: .single)
                            let plan = try #require(try await Self.plans(app, long, [statement], cache: cache).first)
                            let nodes = Self.nodes(plan)
                            let scans = nodes.filter { ($0["Relation Name"] as? String) == "change_log" && ($0["Alias"] as? String) == "c" }
                            #expect(scans.count == 1 && scans.allSatisfy {
                                ($0["Node Type"] as? String)?.hasPrefix("Index") == true && (($0["Index Cond"] as? String) ?? "").contains("position")
                            }, "\(subjects), \(cache): \(scans.map { "\($0["Node Type"] ?? "?") \($0["Index Cond"] ?? "")" })")
                            let sorts = nodes.filter { ($0["Node Type"] as? String) == "Sort" }
                            #expect(sorts.allSatisfy { (($0["Actual Rows"] as? Int) ?? .max) <= limit + 1 }, "\(subjects), \(cache): a sort of more than a page")
                        }
                    }
                }
            }
        }
    }
}
