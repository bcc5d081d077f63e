import Crypto
@testable import DiaryCore
import DiaryModels
@testable import DiaryHTTP
import Foundation
import PostgresClient
import Testing
import TestSupport

/// The change log (migrations 0008, 0027) through delta sync: what is logged, in what order,
/// seen from whose side, and what a cursor promises.
@Suite("Change log and delta sync", .serialized)
struct ChangeLogTests {
    /// Waits (up to 30 s) for `expecting` changes, and for `done`: a change shows once its
    /// transaction has committed, and the server's answer may race the commit.
    static func changes(
        _ api: APIHarness, _ diary: UUID, since: String, token: String, limit: Int = 500, expecting: Int = 0,
        until done: @Sendable (ChangeList) -> Bool = { _ in true }
    ) async throws -> ChangeList {
        var last: ChangeList?
        do {
            return try await waitForValue("\(expecting) changes", within: .seconds(30)) {
                let reply = try await api.call(.get, "/v1/diaries/\(diary)/changes?since=\(since)&limit=\(limit)", token: token)
                guard reply.status == .ok else { throw HarnessError("changes answered \(reply.status): \(reply.text)") }
                let list = try reply.decode(ChangeList.self)
                last = list
                return list.changes.count >= expecting && done(list) ? list : nil
            }
        } catch let error as TimedOut {
            // The caller's expectations say what is missing from the last answer.
            guard let last else { throw error }
            return last
        }
    }

    static func cursor(_ api: APIHarness, _ diary: UUID, token: String) async throws -> String {
        let reply = try await api.call(.get, "/v1/diaries/\(diary)", token: token)
        guard let cursor = try reply.decode(Diary.self).changesCursor else { throw HarnessError("no changesCursor") }
        return cursor
    }

    @Test("every kind of change is logged and shown from the receiver's side")
    func everyKind() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            let start = try await Self.cursor(api, diary.id, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let entry = try await api.post("今日は晴れ", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: bob.accessToken).status == .noContent)
            // A second read moves read_at and is not another 既読.
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: bob.accessToken).status == .noContent)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: alice.accessToken, body: UpdateEntryRequest(content: "曇り")).status == .ok)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)", token: alice.accessToken, body: UpdateDiaryRequest(name: "ふたり")).status == .ok)
            let second = try await api.post("二つ目", in: diary.id, token: bob.accessToken).decode(Entry.self)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: alice.accessToken).status == .noContent)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status == .noContent)

            let all = try await Self.changes(api, diary.id, since: start, token: alice.accessToken, expecting: 5) { $0.changes.last?.type == .memberLeft }
            // A changesCursor may replay changes the read already showed (here, Alice's own
            // joining), when another transaction in the cluster was running: never a gap.
            let seenByAlice = ChangeList(changes: all.changes.filter { $0.type != .memberJoined }, nextCursor: all.nextCursor, hasMore: all.hasMore)
            // The first entry was deleted since, and Bob has left: the events about them as
            // they were (posted, edited, joined) are left out; those that removed them remain.
            #expect(seenByAlice.changes.map(\.type) == [.entryRead, .diaryUpdated, .entryCreated, .entryDeleted, .memberLeft])
            #expect(!seenByAlice.hasMore)
            guard seenByAlice.changes.count == 5 else { return }
            if case .entryRead(let read) = seenByAlice.changes[0].data {
                #expect(read.entryId == entry.id && read.userId == bob.user.id)
            } else { Issue.record("not a read: \(seenByAlice.changes[0])") }
            if case .diary(let renamed) = seenByAlice.changes[1].data { #expect(renamed.name == "ふたり" && renamed.role == .owner) }
            if case .entry(let posted) = seenByAlice.changes[2].data { #expect(posted.id == second.id && !posted.isMine) }
            #expect(seenByAlice.changes[3].data == .entryDeleted(DeletedEntry(id: entry.id)))
            #expect(seenByAlice.changes[4].data == .memberLeft(DepartedMember(userId: bob.user.id)))
            #expect(seenByAlice.changes.allSatisfy { $0.diaryId == diary.id })

            // Bob has left: the diary is a 404 to him, as over REST.
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(start)", token: bob.accessToken).status == .notFound)
            // Resuming from the last event gives nothing more; from the middle, the rest once.
            #expect(try await Self.changes(api, diary.id, since: seenByAlice.changes[4].id, token: alice.accessToken).changes.isEmpty)
            let rest = try await Self.changes(api, diary.id, since: seenByAlice.changes[1].id, token: alice.accessToken, expecting: 3)
            #expect(rest.changes.map(\.id) == seenByAlice.changes.suffix(3).map(\.id))
            #expect(Set(all.changes.map(\.id)).count == all.changes.count)
        }
    }

    @Test("the author's own events say isMine; a page boundary loses and repeats nothing")
    func pagesAndPerspective() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let start = try await Self.cursor(api, diary.id, token: bob.accessToken)
            var posted: [UUID] = []
            for index in 0..<7 {
                posted.append(try await api.post("entry \(index)", in: diary.id, token: alice.accessToken).decode(Entry.self).id)
            }
            var cursor = start
            var seen: [ChangeEvent] = []
            let deadline = ContinuousClock.now + .seconds(10)
            while seen.filter({ $0.type == .entryCreated }).count < posted.count, ContinuousClock.now < deadline {
                let page = try await Self.changes(api, diary.id, since: cursor, token: bob.accessToken, limit: 3)
                #expect(page.changes.count <= 3)
                seen += page.changes
                cursor = page.nextCursor
            }
            #expect(Set(seen.map(\.id)).count == seen.count)
            let entries = seen.compactMap { event -> Entry? in if case .entry(let entry) = event.data { entry } else { nil } }
            #expect(entries.map(\.id) == posted && entries.allSatisfy { !$0.isMine })
            let mine = try await Self.changes(api, diary.id, since: start, token: alice.accessToken, expecting: 7)
            #expect(mine.changes.compactMap { if case .entry(let entry) = $0.data { entry.isMine } else { nil } } == Array(repeating: true, count: 7))
            #expect(try await Self.changes(api, diary.id, since: cursor, token: bob.accessToken).changes.isEmpty)
        }
    }

    /// Each diary orders its own changes (migration 0027): a transaction still open in one
    /// diary holds back no other, and a second write to its diary waits for it and takes
    /// the next position, so a cursor handed out in between skips neither.
    @Test("an open transaction holds back only its own diary; a write that waits on it comes after it, and both arrive once")
    func positionsPerDiary() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let one = try await api.createDiary("一", type: .friends, token: alice.accessToken)
            let two = try await api.createDiary("二", type: .friends, token: alice.accessToken)
            #expect(try await api.join(one.inviteCode, token: bob.accessToken).status == .ok)
            #expect(try await api.join(two.inviteCode, token: bob.accessToken).status == .ok)
            let start = try await Self.cursor(api, one.id, token: bob.accessToken)
            let first = UUID(), second = UUID()
            try await TestDatabase.withPool(api.database, size: 1) { pool in
                try await pool.withConnection { t1 in
                    _ = try await t1.query("begin")
                    _ = try await t1.query("select post_entry_as(\(alice.user.id), \(one.id), \(first), 'first')")

                    // Diary two is not held back by diary one's open transaction.
                    let other = try await api.post("other", in: two.id, token: alice.accessToken).decode(Entry.self)
                    let inTwo = try await Self.changes(api, two.id, since: try await Self.cursor(api, two.id, token: bob.accessToken), token: bob.accessToken)
                    #expect(inTwo.changes.isEmpty, "a cursor read after the post starts past it")
                    let seenInTwo = try await api.call(.get, "/v1/diaries/\(two.id)/changes?since=\(start)", token: bob.accessToken).decode(ChangeList.self)
                    #expect(seenInTwo.changes.contains { if case .entry(let seen) = $0.data { seen.id == other.id } else { false } },
                            "diary one's open transaction held back diary two")

                    // A post to diary one waits for T1, then takes the next position.
                    let waiting = Task { try await api.post("second", in: one.id, token: alice.accessToken, id: second) }
                    try await CounterTests.waitForLockWait("the second post to wait on the diary's row", api, statement: "%post_entry%")
                    let during = try await Self.changes(api, one.id, since: start, token: bob.accessToken)
                    #expect(!during.changes.contains { $0.type == .entryCreated }, "a change is shown before its transaction committed")
                    _ = try await t1.query("commit")
                    #expect(try await waiting.value.status == .created)

                    let after = try await Self.changes(api, one.id, since: during.nextCursor, token: bob.accessToken, expecting: 2)
                    let posted = after.changes.compactMap { if case .entry(let posted) = $0.data { posted.id } else { nil } }
                    #expect(posted == [first, second])
                    #expect(try await Self.changes(api, one.id, since: after.nextCursor, token: bob.accessToken).changes.isEmpty)
                }
            }
        }
    }

    @Test("a rolled-back change is never logged")
    func rolledBack() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let diary = try await api.createDiary("一人", type: .couple, token: alice.accessToken)
            let start = try await Self.cursor(api, diary.id, token: alice.accessToken)
            try await TestDatabase.withPool(api.database, size: 1) { pool in
                try await pool.withConnection { connection in
                    _ = try await connection.query("begin")
                    _ = try await connection.query("select post_entry_as(\(alice.user.id), \(diary.id), gen_random_uuid(), 'never')")
                    _ = try await connection.query("select set_app_setting('app.user_id', \(alice.user.id)::text), refresh_app_diary_ids()")
                    _ = try await connection.query("select rename_diary(\(diary.id), 'never')")
                    _ = try await connection.query("rollback")
                }
            }
            let kept = try await api.post("kept", in: diary.id, token: alice.accessToken).decode(Entry.self)
            // Waits for the entry itself: the owner's member.joined may be all that shows at first.
            let seen = try await Self.changes(api, diary.id, since: start, token: alice.accessToken) { list in
                list.changes.contains { $0.type != .memberJoined }
            }
            #expect(seen.changes.filter { $0.type != .memberJoined }.map(\.data) == [.entry(kept)])
            let logged = try await api.asSuperuser("select count(*)::int as n from change_log where diary_id = \(diary.id) and kind <> 'member.joined'")
            #expect(try logged.first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test("anonymous diaries: events carry aliases, never a real id or name")
    func anonymous() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice-real-name"), bob = try await api.signIn("bob-real-name")
            let diary = try await api.createDiary("秘密", type: .anonymous, token: alice.accessToken)
            let start = try await Self.cursor(api, diary.id, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let entry = try await api.post("bob writes", in: diary.id, token: bob.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: alice.accessToken).status == .noContent)
            let own = try await api.post("alice writes", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(own.id)/read", token: bob.accessToken).status == .noContent)
            let bobAlias = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: alice.accessToken).decode(MemberList.self).members.first { $0.userId != alice.user.id }?.userId
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status == .noContent)

            _ = try await Self.changes(api, diary.id, since: start, token: alice.accessToken, expecting: 5) { $0.changes.last?.type == .memberLeft }
            // Bob's joining is left out: he has left since.
            let reply = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(start)", token: alice.accessToken)
            #expect(reply.status == .ok)
            let events = try reply.decode(ChangeList.self).changes
            #expect(events.map(\.type).filter { $0 != .memberJoined } == [.entryCreated, .entryRead, .entryCreated, .entryRead, .memberLeft])
            #expect(!reply.text.contains(bob.user.id.uuidString.lowercased()) && !reply.text.localizedCaseInsensitiveContains(bob.user.id.uuidString))
            #expect(!reply.text.contains("bob-real-name"))
            if case .memberLeft(let departed) = events.last?.data { #expect(departed.userId == bobAlias) }
            // The log names readers as member_profiles names them to the caller: herself by her
            // id, the other member by his alias.
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: alice.accessToken).decode(MemberList.self).members
            #expect(members.map(\.userId) == [alice.user.id])
            let readers = events.compactMap { event -> UUID? in if case .entryRead(let read) = event.data { read.userId } else { nil } }
            #expect(readers == [alice.user.id, bobAlias].compactMap { $0 })
        }
    }

    @Test("one who left reads of the diary exactly what change_log_select lets them see: their own departure")
    func departureIsThePolicys() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            _ = try await api.post("before", in: diary.id, token: bob.accessToken)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status == .noContent)
            _ = try await api.post("after", in: diary.id, token: alice.accessToken)
            // As diary_app with bob's identity: the repository's statement, and the table under its policy alone.
            let results = try await api.pool.transaction([
                Seed.identity(bob.user.id), "select refresh_app_diary_ids()",
                ChangeLogRepository.changesStatement(inDiary: diary.id, after: 0, limit: 100, on: .single),
                "select position from change_log where diary_id = \(diary.id) order by position",
            ])
            let told = try results[2].compactMap { try $0.decode("position", as: Int64?.self) }
            let visible = try results[3].map { try $0.decode("position", as: Int64.self) }
            #expect(told.count == 1 && told == visible, "the repository tells \(told), the policy shows \(visible)")
            let all = try await api.asSuperuser("select count(*)::int8 as n from change_log where diary_id = \(diary.id)")
            #expect(try all[0].decode("n", as: Int.self) > visible.count, "the diary has changes the policy hides from him")
        }
    }

    @Test("cursors: unknown, from the future, or older than what is kept get resync_required")
    func cursorsAndRetention() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), carol = try await api.signIn("carol")
            let diary = try await api.createDiary("一人", type: .friends, token: alice.accessToken)
            let start = try await Self.cursor(api, diary.id, token: alice.accessToken)
            for since in ["", "garbage", "Yz", ChangeCursor(positions: [diary.id: 1 << 60]).encoded, String(repeating: "A", count: 64)] {
                let reply = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(since)", token: alice.accessToken)
                #expect(reply.status == .gone && reply.code == "resync_required", "\(since)")
            }
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes", token: alice.accessToken).code == "validation_failed")
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(String(repeating: "A", count: ChangeCursor.maximumLength + 1))", token: alice.accessToken).code == "validation_failed")
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(start)&limit=501", token: alice.accessToken).code == "validation_failed")
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(start)", token: carol.accessToken).status == .notFound)

            _ = try await api.post("old", in: diary.id, token: alice.accessToken)
            let middle = try await Self.changes(api, diary.id, since: start, token: alice.accessToken) {
                $0.changes.contains { $0.type == .entryCreated }
            }.nextCursor
            _ = try await api.post("new", in: diary.id, token: alice.accessToken)
            // 29 days old stays; 31 days old goes, even when asked to prune younger ones: the
            // owner's joining and the first post, but not the second.
            try await api.asSuperuser("update change_log set at = now() - interval '31 days' where diary_id = \(diary.id) and position <= 2")
            try await api.asSuperuser("update change_log set at = now() - interval '29 days' where diary_id = \(diary.id) and position = 3")
            let removed = try await api.asSuperuser("select prune_change_log(interval '1 day', 1000) as removed")
            #expect(try removed.first?.decode("removed", as: Int.self) == 2)
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(start)", token: alice.accessToken).code == "resync_required")
            #expect(try await Self.changes(api, diary.id, since: middle, token: alice.accessToken, expecting: 1).changes.filter { $0.type == .entryCreated }.count == 1)
        }
    }

    @Test("a socket woken for diaries reads each in one statement, all in one round trip, and gets what reading every diary gets")
    func wokenDiariesOneStatementEach() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol")
            let couple = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(couple.inviteCode, token: bob.accessToken).status == .ok)
            let friends = try await api.createDiary("友達", type: .anonymous, token: carol.accessToken)
            let tokens = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
            let scope = RequestScope(
                identity: try await tokens.verifyAccessToken(bob.accessToken), pool: api.pool, photoLinks: PhotoLinks(key: SymmetricKey(size: .bits256)),
                inviteLinks: InviteLinks(publicURL: ServerConfiguration.developmentPublicURL))
            let repository = ChangeLogRepository(scope: scope)
            let start = try await repository.position()
            // After the cursor: a post, a read and an edit in one diary; a join (from where the
            // cursor does not name the diary) and a post in the other.
            let posted = try await api.post("おはよう", in: couple.id, token: alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.id)/entries/\(posted.id)/read", token: bob.accessToken).status.code < 300)
            #expect(try await api.call(.patch, "/v1/diaries/\(couple.id)/entries/\(posted.id)", token: alice.accessToken, body: UpdateEntryRequest(content: "おはよう!")).status == .ok)
            #expect(try await api.join(friends.inviteCode, token: bob.accessToken).status == .ok)
            _ = try await api.post("ようこそ", in: friends.id, token: carol.accessToken)

            let recorder = RequestScope.StatementRecorder()
            let woken = try await RequestScope.$recorder.withValue(recorder) {
                try await repository.changes(after: start, inDiaries: [couple.id, friends.id], limit: 100)
            }
            let transactions = recorder.recorded
            #expect(transactions.count == 1 && transactions.first?.count == 4, "\(transactions.map(\.count)) statements: authenticate, one a diary, then the session confirmed live")
            let everything = try await repository.changes(after: start, limit: 100)
            guard case .page(let page) = woken, case .page(let all) = everything else { Issue.record("resync: \(woken), \(everything)"); return }
            #expect(page.events.map(\.type) == [.entryCreated, .entryRead, .entryUpdated, .memberJoined, .entryCreated])
            #expect(page.events == all.events && page.next == all.next && !page.hasMore)
            let edited = page.events.compactMap { event -> Entry? in if case .entry(let entry) = event.data { entry } else { nil } }
            #expect(edited.map(\.content) == ["おはよう!", "おはよう!", "ようこそ"], "an entry shows as it is now, as the REST API shows it")
            // Anonymous: bob's own join carries his id, carol's post an alias.
            if case .member(let member) = page.events[3].data { #expect(member.userId == bob.user.id) } else { Issue.record("\(page.events[3])") }
            #expect(edited.last.map { $0.author.id != carol.user.id } == true)
        }
    }
}
