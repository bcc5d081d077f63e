import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// The maintained counters of migration 0007: exact on every path, and checked from scratch
/// by `CounterReconciliation` (`diary-server check-counters`) after each scenario.
@Suite("Maintained counters")
struct CounterTests {
    struct Member {
        var id: UUID
        var token: String
    }

    static func member(_ name: String, _ api: APIHarness) async throws -> Member {
        let session = try await api.signIn(name)
        return Member(id: session.user.id, token: session.accessToken)
    }

    /// The unread count `member` sees for `diary`, on the home list and on the diary, which must agree.
    static func unread(_ member: Member, in diary: UUID, _ api: APIHarness) async throws -> Int {
        let one = try await api.call(.get, "/v1/diaries/\(diary)", token: member.token)
        try #require(one.status == .ok, "\(one.text)")
        let list = try await api.call(.get, "/v1/diaries", token: member.token)
        let listed = try #require(try list.decode(DiaryList.self).diaries.first { $0.id == diary })
        let diaryCount = try one.decode(Diary.self).unreadCount
        #expect(listed.unreadCount == diaryCount)
        return diaryCount
    }

    /// A couple's diary in which `<prefix>-a` has posted an entry that `<prefix>-b` has not read.
    static func coupleWithUnreadEntry(_ prefix: String, _ api: APIHarness) async throws -> (reader: Member, diary: Diary, entry: UUID) {
        let a = try await Self.member("\(prefix)-a", api)
        let b = try await Self.member("\(prefix)-b", api)
        let diary = try await api.createDiary("二人の日記", type: .couple, token: a.token)
        #expect(try await api.join(diary.inviteCode, token: b.token).status == .ok)
        return (b, diary, try await Self.post("未読のまま", by: a, in: diary.id, api))
    }

    /// Waits until a statement (any, or one `like` the pattern) in the test's database waits on a lock.
    static func waitForLockWait(_ what: String, _ api: APIHarness, statement pattern: String = "%") async throws {
        try await waitUntil(what) {
            try await TestDatabase.withAdminPool { admin in
                try await admin.query("""
                    select 1 from pg_stat_activity
                    where datname = \(api.database.database!) and wait_event_type = 'Lock' and query like \(pattern)
                    """).count > 0
            }
        }
    }

    static func post(_ content: String, by member: Member, in diary: UUID, _ api: APIHarness) async throws -> UUID {
        let reply = try await api.post(content, in: diary, token: member.token)
        try #require(reply.status == .created, "\(reply.text)")
        return try reply.decode(Entry.self).id
    }

    static func read(_ entry: UUID, by member: Member, in diary: UUID, _ api: APIHarness) async throws {
        let reply = try await api.call(.post, "/v1/diaries/\(diary)/entries/\(entry)/read", token: member.token)
        try #require(reply.status == .noContent, "\(reply.text)")
    }

    static func delete(_ entry: UUID, by member: Member, in diary: UUID, _ api: APIHarness) async throws {
        let reply = try await api.call(.delete, "/v1/diaries/\(diary)/entries/\(entry)", token: member.token)
        try #require(reply.status == .noContent, "\(reply.text)")
    }

    static func leave(_ diary: UUID, _ member: Member, _ api: APIHarness) async throws {
        let reply = try await api.call(.delete, "/v1/diaries/\(diary)/members/\(member.id)", token: member.token)
        try #require(reply.status == .noContent, "\(reply.text)")
    }

    static func differences(_ api: APIHarness) async throws -> [CounterReconciliation.Difference] {
        try await TestDatabase.withPool(api.database.as(TestDatabase.ownerRole), size: 1) {
            try await CounterReconciliation(pool: $0).differences()
        }
    }

    @Test("unread counts follow posts, reads, deletes, joins, leaves, account deletion and rollback")
    func everyPath() async throws {
        try await APIHarness.run { api in
            let a = try await Self.member("counter-a", api)
            let b = try await Self.member("counter-b", api)
            let c = try await Self.member("counter-c", api)
            let diary = try await api.createDiary("家族の日記", type: .family, token: a.token)
            #expect(try await api.join(diary.inviteCode, token: b.token).status == .ok)

            let first = try await Self.post("一", by: a, in: diary.id, api)
            let second = try await Self.post("二", by: a, in: diary.id, api)
            let third = try await Self.post("三", by: a, in: diary.id, api)
            #expect(try await Self.unread(b, in: diary.id, api) == 3)
            #expect(try await Self.unread(a, in: diary.id, api) == 0)

            // A first read counts once; a second read of the same entry does not count again.
            try await Self.read(first, by: b, in: diary.id, api)
            try await Self.read(first, by: b, in: diary.id, api)
            #expect(try await Self.unread(b, in: diary.id, api) == 2)

            // Reading one's own entry changes nothing.
            let bs = try await Self.post("Bの日記", by: b, in: diary.id, api)
            try await Self.read(bs, by: b, in: diary.id, api)
            #expect(try await Self.unread(b, in: diary.id, api) == 2)
            #expect(try await Self.unread(a, in: diary.id, api) == 1)

            // Deleting an unread entry takes it off; deleting a read one changes nothing.
            try await Self.delete(second, by: a, in: diary.id, api)
            #expect(try await Self.unread(b, in: diary.id, api) == 1)
            try await Self.delete(first, by: a, in: diary.id, api)
            #expect(try await Self.unread(b, in: diary.id, api) == 1)

            // A newcomer's count is the entries by others that already exist.
            #expect(try await api.join(diary.inviteCode, token: c.token).status == .ok)
            #expect(try await Self.unread(c, in: diary.id, api) == 2)

            // Leaving changes nobody else's count; coming back finds one's own receipts again.
            try await Self.read(bs, by: c, in: diary.id, api)
            try await Self.leave(diary.id, c, api)
            #expect(try await Self.unread(a, in: diary.id, api) == 1)
            #expect(try await Self.unread(b, in: diary.id, api) == 1)
            let fourth = try await Self.post("四", by: a, in: diary.id, api)
            #expect(try await api.join(diary.inviteCode, token: c.token).status == .ok)
            #expect(try await Self.unread(c, in: diary.id, api) == 2, "third and fourth; B's entry was read before leaving")
            _ = fourth

            // C posts, then deletes their account: the entries go, and so do the counts they added.
            _ = try await Self.post("Cの日記", by: c, in: diary.id, api)
            #expect(try await Self.unread(a, in: diary.id, api) == 2)
            #expect(try await api.call(.delete, "/v1/me", token: c.token).status == .noContent)
            #expect(try await Self.unread(a, in: diary.id, api) == 1)
            #expect(try await Self.unread(b, in: diary.id, api) == 2)

            // A rolled-back post leaves every count as it was.
            struct RolledBack: Error {}
            await #expect(throws: RolledBack.self) {
                try await TestDatabase.withPool(api.database, size: 1) { pool in
                    try await pool.withTransaction { connection in
                        try await connection.query("select post_entry_as(\(a.id), \(diary.id), gen_random_uuid(), 'rolled back')")
                        throw RolledBack()
                    }
                }
            }
            #expect(try await Self.unread(b, in: diary.id, api) == 2)

            // Not even the superuser moves an entry to another author: the counters would not follow.
            await #expect(throws: PostgresError.self) {
                try await api.asSuperuser("update entries set user_id = \(b.id) where diary_id = \(diary.id) and id = \(third)")
            }
            #expect(try await Self.differences(api) == [])
        }
    }

    @Test("concurrent posts, reads, deletes, joins, leaves and an account deletion leave no difference")
    func concurrentScenario() async throws {
        try await APIHarness.run(poolSize: 8) { api in
            let owner = try await Self.member("race-owner", api)
            let diary = try await api.createDiary("競争", type: .family, token: owner.token)
            var writers = [owner]
            for index in 1..<6 {
                let member = try await Self.member("race-writer-\(index)", api)
                #expect(try await api.join(diary.inviteCode, token: member.token).status == .ok)
                writers.append(member)
            }
            var visitors: [Member] = []
            for index in 0..<3 { visitors.append(try await Self.member("race-visitor-\(index)", api)) }
            let seeded = try await Self.post("最初", by: owner, in: diary.id, api)

            let start = StartingLine(expected: writers.count + visitors.count)
            let statuses = try await withThrowingTaskGroup(of: [HTTPResponse.Status].self) { group in
                for (index, writer) in writers.enumerated() {
                    let quitter = index == writers.count - 1
                    group.addTask {
                        await start.arriveAndWait()
                        var statuses: [HTTPResponse.Status] = []
                        var mine: [UUID] = []
                        for round in 0..<12 {
                            let id = UUID()
                            statuses.append(try await api.post("\(index)-\(round)", in: diary.id, token: writer.token, id: id).status)
                            mine.append(id)
                            // Others' entries: the seeded one twice, and whatever a neighbour may have posted.
                            for entry in [seeded, seeded] {
                                statuses.append(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry)/read", token: writer.token).status)
                            }
                            let timeline = try await api.call(.get, "/v1/diaries/\(diary.id)/entries?limit=5", token: writer.token)
                            if let page = try? timeline.decode(EntryPage.self) {
                                for entry in page.entries where !entry.isMine {
                                    statuses.append(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: writer.token).status)
                                }
                            }
                            if round % 4 == 3, let victim = mine.popLast() {
                                statuses.append(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(victim)", token: writer.token).status)
                            }
                        }
                        if quitter {
                            statuses.append(try await api.call(.delete, "/v1/me", token: writer.token).status)
                        }
                        return statuses
                    }
                }
                for visitor in visitors {
                    group.addTask {
                        await start.arriveAndWait()
                        var statuses: [HTTPResponse.Status] = []
                        for _ in 0..<4 {
                            statuses.append(try await api.join(diary.inviteCode, token: visitor.token).status)
                            statuses.append(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(seeded)/read", token: visitor.token).status)
                            statuses.append(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(visitor.id)", token: visitor.token).status)
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            // 404: a read of an entry its author deleted meanwhile. Nothing else may fail.
            let failures = statuses.filter { ![.ok, .created, .noContent, .notFound].contains($0) }
            #expect(failures.isEmpty, "\(failures)")
            #expect(try await Self.differences(api) == [])
        }
    }

    @Test("a read that waits for the entry's deletion is a 404, not a conflict")
    func readRacingDeletion() async throws {
        try await APIHarness.run { api in
            let (b, diary, entry) = try await Self.coupleWithUnreadEntry("race-read", api)
            let read = try await TestDatabase.withPool(api.database, size: 1) { pool in
                try await pool.withTransaction { connection in
                    try await connection.query("select forget_entries(\(diary.id), array[\(entry)], true)")
                    // The read finds the entry in its snapshot and waits for this transaction's lock on it.
                    let read = Task { try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry)/read", token: b.token) }
                    try await Self.waitForLockWait("the read waits for the delete's lock", api)
                    try await connection.query("select 1")
                    return read
                }
            }
            let reply = try await read.value
            #expect(reply.status == .notFound, "\(reply.text)")
            #expect(try await Self.unread(b, in: diary.id, api) == 0)
            #expect(try await Self.differences(api) == [])
        }
    }

    @Test("a delete takes the diary's row before its members' rows, as a post does, so the two never deadlock")
    func deleteLocksInPostOrder() async throws {
        try await APIHarness.run { api in
            let (b, diary, entry) = try await Self.coupleWithUnreadEntry("order", api)
            try await TestDatabase.withPool(api.database, size: 2) { pool in
                // A post in the middle of its transaction: the diary's row taken (entry_count), the
                // members' rows (unread_count) next.
                try await pool.withTransaction { post in
                    try await post.query("select 1 from diaries where id = \(diary.id) for update")
                    let delete = Task {
                        try await pool.withConnection { _ = try await $0.query("select forget_entries(\(diary.id), array[\(entry)], true)") }
                    }
                    try await Self.waitForLockWait("the delete waits for the post's lock", api, statement: "%forget_entries%")
                    // Had the delete taken b's member row before waiting, this waits on it and one of
                    // the two is chosen as a deadlock's victim (40P01).
                    try await post.query("update diary_members set unread_count = unread_count where diary_id = \(diary.id) and user_id = \(b.id)")
                    return delete
                }.value
            }
            #expect(try await Self.unread(b, in: diary.id, api) == 0)
            #expect(try await Self.differences(api) == [])
        }
    }

    @Test("statements of many rows count each row: bulk posts, receipts and deletes across diaries")
    func bulkStatements() async throws {
        try await APIHarness.run { api in
            let a = try await Self.member("bulk-a", api)
            let b = try await Self.member("bulk-b", api)
            let c = try await Self.member("bulk-c", api)
            let family = try await api.createDiary("まとめて", type: .family, token: a.token)
            let couple = try await api.createDiary("ふたり", type: .couple, token: a.token)
            for (diary, members) in [(family, [b, c]), (couple, [b])] {
                for member in members { #expect(try await api.join(diary.inviteCode, token: member.token).status == .ok) }
            }
            // Not even the superuser inserts entries but through post_entry, which keeps the counters.
            let direct = await #expect(throws: PostgresError.self) {
                try await api.asSuperuser("insert into entries (diary_id, user_id, content) values (\(family.id), \(a.id), 'direct')")
            }
            #expect(direct?.sqlState == SQLState("42501"))
            // 30 entries by A and 20 by B in the family diary, 10 by A in the couple's, in one statement.
            try await api.asSuperuser("""
                select post_entry_as(case when g <= 30 then \(a.id) else \(b.id) end, \(family.id), gen_random_uuid(), 'bulk ' || g) from generate_series(1, 50) g
                union all
                select post_entry_as(\(a.id), \(couple.id), gen_random_uuid(), 'bulk ' || g) from generate_series(1, 10) g
                """)
            #expect(try await Self.unread(c, in: family.id, api) == 50)
            #expect(try await Self.unread(b, in: family.id, api) == 30)
            #expect(try await Self.unread(b, in: couple.id, api) == 10)
            // C reads every entry of the family diary in one statement.
            try await api.asSuperuser("select mark_as_read_as(\(c.id), diary_id, id) from entries where diary_id = \(family.id)")
            #expect(try await Self.unread(c, in: family.id, api) == 0)
            // Nor deletes them but through forget_entries, which keeps the counters too.
            let deleted = await #expect(throws: PostgresError.self) {
                try await api.asSuperuser("delete from entries where user_id = \(a.id) and content = 'bulk 1'")
            }
            #expect(deleted?.sqlState == SQLState("42501"))
            // One statement deletes read and unread entries in both diaries.
            try await api.asSuperuser("""
                select forget_entries(diary_id, array_agg(id), true) from entries
                where user_id = \(a.id) and content in ('bulk 1', 'bulk 2', 'bulk 3') group by diary_id
                """)
            #expect(try await Self.unread(b, in: family.id, api) == 27)
            #expect(try await Self.unread(b, in: couple.id, api) == 7)
            #expect(try await Self.unread(c, in: family.id, api) == 0)
            #expect(try await Self.differences(api) == [])
        }
    }

    @Test("check-counters finds a wrong counter, repairs it, and exits 1 only while one is wrong")
    func reconciliationFindsAndRepairs() async throws {
        try await APIHarness.run { api in
            let a = try await Self.member("repair-a", api)
            let b = try await Self.member("repair-b", api)
            let diary = try await api.createDiary("修理", type: .couple, token: a.token)
            #expect(try await api.join(diary.inviteCode, token: b.token).status == .ok)
            _ = try await Self.post("一", by: a, in: diary.id, api)
            #expect(try await Self.differences(api) == [])

            try await api.asSuperuser("update diary_members set unread_count = 7 where diary_id = \(diary.id) and user_id = \(b.id)")
            try await api.asSuperuser("update diaries set entry_count = 0 where id = \(diary.id)")
            let expected: Set<CounterReconciliation.Difference> = [
                .init(counter: .unreadCount, diaryID: diary.id, userID: b.id, stored: 7, actual: 1),
                .init(counter: .entryCount, diaryID: diary.id, userID: nil, stored: 0, actual: 1),
            ]
            #expect(Set(try await Self.differences(api)) == expected)

            let owner = try ServerProcess.url(of: api.database.as(TestDatabase.ownerRole))
            let check = try await ServerProcess.runCommand(["check-counters", "--database-url", owner])
            #expect(check.status == 1)
            #expect(check.output.contains("unread_count of diary \(diary.id) member \(b.id): stored 7, actual 1"), "\(check.output)")
            #expect(check.output.contains("2 differences"), "\(check.output)")

            let repair = try await ServerProcess.runCommand(["check-counters", "--repair", "--database-url", owner])
            #expect(repair.status == 0, "\(repair.output)")
            #expect(repair.output.contains("2 differences repaired"), "\(repair.output)")
            #expect(try await Self.differences(api) == [])
            #expect(try await Self.unread(b, in: diary.id, api) == 1)

            let clean = try await ServerProcess.runCommand(["check-counters", "--database-url", owner])
            #expect(clean.status == 0 && clean.output.contains("0 differences"), "\(clean.output)")
        }
    }
}
