import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// The met cost goals, held in `make test`: every everyday statement costs the same whatever
/// the length of a diary's history. Two family diaries alike but for their length (20 and
/// 20,000 entries) are read and written by the statements the repositories send, under
/// EXPLAIN (ANALYZE, BUFFERS) as the caller; the long diary's shared buffers must stay
/// within 1.2× the short one's, with statistics taken before the long diary grew, when 150
/// other diaries had been written (stale, autovacuum off), and after ANALYZE. Buffers, not time: they do not depend on the load of
/// the machine, so the test holds on a loaded one.
@Suite("Plans stay history-independent")
struct PlanGuardTests {
    static let short = 20
    static let long = 20_000
    static let allowedRatio = 1.2
    /// Diaries written before the statistics are taken, as on a server that has run a while.
    static let others = 150

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

    /// The everyday statements, as the repositories spell them, each request's statements together.
    static func requests(_ diary: Diary, position: Int64) -> [(name: String, statements: [PostgresQuery], writes: Bool)] {
        let cursor = EntryRepository.Cursor(createdAt: diary.eleventhCreatedAt, id: diary.eleventh)
        return [
            ("home list", [DiaryRepository.listStatement], false),
            ("a diary", DiaryRepository.findStatements(diary.diary), false),
            ("the timeline's first page", EntryRepository.timelineStatements(of: diary.diary, limit: 20, before: nil), false),
            ("a later page", EntryRepository.timelineStatements(of: diary.diary, limit: 5, before: cursor), false),
            ("an entry", [EntryRepository.findStatement(diary.eleventh, in: diary.diary)], false),
            // A first read, each time: every run is rolled back.
            ("mark read", EntryRepository.markReadStatements(diary.unread, in: diary.diary), true),
            ("post", EntryRepository.postStatements(UUID(), in: diary.diary, content: "新しい日記", question: nil, photoIDs: [])
                + [EntryRepository.readBack(UUID(), in: diary.diary).spelled(for: .single)], true),
            ("the realtime read", [ChangeLogRepository.changesStatement(inDiary: diary.diary, after: position - 5, limit: 100)], false),
            ("the fan-out's read", [ChangeLogRepository.changesStatement(inDiary: diary.diary, after: position - 5, limit: 100, subjects: .entries)], false),
        ]
    }

    /// Each statement's plan, executed as the caller in a transaction that is rolled back.
    static func plans(_ app: PostgresPool, _ diary: Diary, _ statements: [PostgresQuery]) async throws -> [[String: Any]] {
        let texts = try await app.withConnection { connection in
            try await connection.query("begin")
            do {
                try await connection.query("select authenticate(\(diary.session), \(diary.user))")
                var texts: [String] = []
                for statement in statements {
                    let explained = PostgresQuery(unsafeSQL: "explain (analyze, buffers, format json) " + statement.sql, bindings: statement.bindings)
                    texts.append(try #require(try await connection.query(explained).first?.decode("QUERY PLAN", as: String.self)))
                }
                try await connection.query("rollback")
                return texts
            } catch {
                _ = try? await connection.query("rollback")
                throw error
            }
        }
        return try texts.map { text in
            let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            return try #require(json.first?["Plan"] as? [String: Any])
        }
    }

    static func buffers(_ plan: [String: Any]) -> Int {
        ((plan["Shared Hit Blocks"] as? Int) ?? 0) + ((plan["Shared Read Blocks"] as? Int) ?? 0)
    }

    static func nodes(_ plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap(nodes)
    }

    /// Each request's shared buffers, the second of two runs (the first warms the caches).
    static func costs(_ app: PostgresPool, _ diary: Diary) async throws -> [String: Int] {
        let position = try #require(try await app.withConnection { connection in
            try await connection.query("begin")
            try await connection.query("select authenticate(\(diary.session), \(diary.user))")
            let rows = try await connection.query(ChangeLogRepository.positionStatement(ofDiary: diary.diary))
            try await connection.query("rollback")
            return try rows.first?.decode("change_position", as: Int64.self)
        })
        var costs: [String: Int] = [:]
        for request in requests(diary, position: position) {
            _ = try await plans(app, diary, request.statements)
            costs[request.name] = try await plans(app, diary, request.statements).map(buffers).reduce(0, +)
        }
        return costs
    }

    static func expectIndependent(_ short: [String: Int], _ long: [String: Int], statistics: String) {
        for (name, shortCost) in short.sorted(by: { $0.key < $1.key }) {
            let longCost = long[name] ?? .max
            #expect(Double(longCost) <= Double(shortCost) * allowedRatio,
                    "\(name), statistics \(statistics): \(longCost) shared buffers at \(Self.long) entries against \(shortCost) at \(Self.short)")
        }
    }

    @Test("the home list, a diary, the timeline's pages, an entry, mark read, post, the realtime read and the fan-out's cost the same at 20 and at 20,000 entries, with stale statistics and fresh")
    func historyIndependent() async throws {
        try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { admin in
                // Statistics taken only when asked: the stale case is the long diary grown after them.
                for table in ["diaries", "diary_members", "user_diaries", "entries", "entry_reads", "entry_photos", "change_log"] {
                    try await admin.query(PostgresQuery(unsafeSQL: "alter table \(table) set (autovacuum_enabled = false)"))
                }
                let short = try await Self.seed(admin, size: 1, entries: Self.short)
                for other in 0..<Self.others { _ = try await Self.seed(admin, size: 100 + other, entries: Self.short) }
                try await admin.query("analyze")
                let long = try await Self.seed(admin, size: 2, entries: Self.long)
                try await TestDatabase.withPool(database.as(TestDatabase.appRole), size: 1) { app in
                    Self.expectIndependent(try await Self.costs(app, short), try await Self.costs(app, long), statistics: "stale")
                    try await admin.query("vacuum analyze")
                    Self.expectIndependent(try await Self.costs(app, short), try await Self.costs(app, long), statistics: "fresh")

                    // The socket's read of the log, and the fan-out's: a range of its index from
                    // where the read begins, in the index's order; nothing sorted but the page.
                    let position = try #require(try await admin.query("select change_position from diaries where id = \(long.diary)").first?.decode("change_position", as: Int64.self))
                    let limit = 100
                    for subjects in [ChangeLogRepository.Subjects.all, .entries] {
                        let plan = try #require(try await Self.plans(app, long, [ChangeLogRepository.changesStatement(inDiary: long.diary, after: position - 5, limit: limit, subjects: subjects)]).first)
                        let nodes = Self.nodes(plan)
                        let scans = nodes.filter { ($0["Relation Name"] as? String) == "change_log" && ($0["Alias"] as? String) == "c" }
                        #expect(scans.count == 1 && scans.allSatisfy {
                            ($0["Node Type"] as? String)?.hasPrefix("Index") == true && (($0["Index Cond"] as? String) ?? "").contains("position")
                        }, "\(subjects): \(scans.map { "\($0["Node Type"] ?? "?") \($0["Index Cond"] ?? "")" })")
                        let sorts = nodes.filter { ($0["Node Type"] as? String) == "Sort" }
                        #expect(sorts.allSatisfy { (($0["Actual Rows"] as? Int) ?? .max) <= limit + 1 }, "\(subjects): a sort of more than a page")
                    }
                }
            }
        }
    }
}
