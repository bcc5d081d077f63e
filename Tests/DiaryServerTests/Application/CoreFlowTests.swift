import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("The core flow over HTTP")
struct CoreFlowTests {
    @Test("sign in, create a diary, partner joins, both write, each sees what the other read", arguments: [false, true], DatabaseRoute.allCases)
    func coreFlow(sharedReads: Bool, route: DatabaseRoute) async throws {
        try await APIHarness.run(sharedReads: sharedReads, route: route) { api in
            let aiko = try await api.signIn("aiko")
            let ben = try await api.signIn("ben")
            let diary = try await api.createDiary("ふたりの日記", type: .couple, token: aiko.accessToken)
            #expect(diary.role == .owner && diary.maxMembers == 2 && diary.memberCount == 1)
            #expect(diary.inviteCode.count == 10)

            let joined = try await api.join(diary.inviteCode.lowercased(), token: ben.accessToken)
            #expect(joined.status == .ok)
            #expect(try joined.decode(Diary.self).role == .member)

            let first = try await api.post("今日は晴れ", in: diary.id, token: aiko.accessToken)
            #expect(first.status == .created)
            let entry = try first.decode(Entry.self)
            #expect(entry.isMine && entry.author.displayName == "aiko")
            let reply = try await api.post("こちらは雨", in: diary.id, token: ben.accessToken)
            #expect(reply.status == .created)

            // Ben has one unread entry (Aiko's) until he reads it.
            let bensList = try await api.call(.get, "/v1/diaries", token: ben.accessToken).decode(DiaryList.self)
            #expect(bensList.diaries.map(\.unreadCount) == [1])
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: ben.accessToken).status == .noContent)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: ben.accessToken).status == .noContent)
            let after = try await api.call(.get, "/v1/diaries", token: ben.accessToken).decode(DiaryList.self)
            #expect(after.diaries.map(\.unreadCount) == [0])

            let timeline = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: aiko.accessToken).decode(EntryPage.self)
            #expect(timeline.entries.map(\.content) == ["こちらは雨", "今日は晴れ"])
            #expect(timeline.entries[1].readBy.map(\.userId) == [ben.user.id])
            let reads = try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(entry.id)/reads", token: aiko.accessToken).decode(ReadList.self)
            #expect(reads.reads.map(\.userId) == [ben.user.id])

            let question = try await api.call(.get, "/v1/questions/today", token: aiko.accessToken)
            #expect(question.status == .ok)
            #expect(try !question.decode(TodayQuestion.self).question.isEmpty)
        }
    }

    @Test("the timeline pages newest first with an opaque cursor, and every entry appears once")
    func timelinePaging() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日々", type: .family, token: aiko.accessToken)
            for index in 0..<25 { _ = try await api.post("entry \(index)", in: diary.id, token: aiko.accessToken) }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/v1/diaries/\(diary.id)/entries?limit=10" + (cursor.map { "&before=\($0)" } ?? "")
                let page = try await api.call(.get, path, token: aiko.accessToken).decode(EntryPage.self)
                seen += page.entries.map(\.content)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == (0..<25).reversed().map { "entry \($0)" })
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/entries?before=garbage", token: aiko.accessToken).status == .badRequest)
        }
    }

    @Test("client-generated ids: a replay returns 200 and the same entry; other reuse is 409 and changes nothing")
    func idempotentPosts() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let ben = try await api.signIn("ben")
            let diary = try await api.createDiary("日々", type: .family, token: aiko.accessToken)
            _ = try await api.join(diary.inviteCode, token: ben.accessToken)
            let id = UUID()
            #expect(try await api.post("original", in: diary.id, token: aiko.accessToken, id: id).status == .created)
            let replay = try await api.post("original", in: diary.id, token: aiko.accessToken, id: id)
            #expect(replay.status == .ok)
            #expect(try replay.decode(Entry.self).id == id)
            let changed = try await api.post("different", in: diary.id, token: aiko.accessToken, id: id)
            #expect(changed.status == .conflict && changed.code == "entry_id_conflict")
            let stolen = try await api.post("original", in: diary.id, token: ben.accessToken, id: id)
            #expect(stolen.status == .conflict && stolen.code == "entry_id_conflict")
            let stored = try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(id)", token: aiko.accessToken).decode(Entry.self)
            #expect(stored.content == "original" && stored.isMine)
        }
    }

    @Test("20 concurrent posts with one client id leave exactly one row")
    func concurrentSameIDPosts() async throws {
        try await APIHarness.run(poolSize: 8) { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日々", type: .family, token: aiko.accessToken)
            let id = UUID()
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<20 { group.addTask { try await api.post("once", in: diary.id, token: aiko.accessToken, id: id).status } }
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.filter { $0 == .created }.count == 1)
            #expect(statuses.filter { $0 == .ok }.count == 19)
            let count = try #require(try await api.asSuperuser("select count(*)::int8 as n from entries where id = \(id)").first)
            #expect(try count.decode("n", as: Int.self) == 1)
        }
    }

    @Test("50 concurrent joins to a couple diary over HTTP: exactly one gets in")
    func concurrentJoins() async throws {
        try await APIHarness.run(poolSize: 16) { api in
            let owner = try await api.signIn("owner")
            let diary = try await api.createDiary("ふたり", type: .couple, token: owner.accessToken)
            var tokens: [String] = []
            for index in 0..<50 { tokens.append(try await api.signIn("joiner \(index)").accessToken) }
            let codes = try await withThrowingTaskGroup(of: String.self) { group in
                for token in tokens {
                    group.addTask {
                        let reply = try await api.join(diary.inviteCode, token: token)
                        return reply.status == .ok ? "joined" : (reply.code ?? "\(reply.status)")
                    }
                }
                var codes: [String] = []
                for try await code in group { codes.append(code) }
                return codes
            }
            #expect(codes.filter { $0 == "joined" }.count == 1)
            #expect(codes.filter { $0 == "diary_full" }.count == 49)
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: owner.accessToken).decode(MemberList.self)
            #expect(members.members.count == 2)
        }
    }

    @Test("leaving, removing and deleting an account hand ownership on, delete a diary nobody else was in, and close an emptied one")
    func membershipChanges() async throws {
        try await APIHarness.run { api in
            let owner = try await api.signIn("owner")
            let first = try await api.signIn("first")
            let second = try await api.signIn("second")
            let diary = try await api.createDiary("家族", type: .family, token: owner.accessToken)
            _ = try await api.join(diary.inviteCode, token: first.accessToken)
            _ = try await api.join(diary.inviteCode, token: second.accessToken)
            let solo = try await api.createDiary("ひとり", type: .friends, token: owner.accessToken)

            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(second.user.id)", token: first.accessToken).status == .forbidden)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(second.user.id)", token: owner.accessToken).status == .noContent)
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)", token: second.accessToken).status == .notFound)

            #expect(try await api.call(.delete, "/v1/me", token: owner.accessToken).status == .noContent)
            #expect(try await api.call(.get, "/v1/me", token: owner.accessToken).status == .unauthorized)
            let inherited = try await api.call(.get, "/v1/diaries/\(diary.id)", token: first.accessToken).decode(Diary.self)
            #expect(inherited.role == .owner && inherited.memberCount == 1)
            let gone = try #require(try await api.asSuperuser("select count(*)::int8 as n from diaries where id = \(solo.id)").first)
            #expect(try gone.decode("n", as: Int.self) == 0)

            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(first.user.id)", token: first.accessToken).status == .noContent)
            // Its former members (the removed one, the last to leave) may still restore it.
            let emptied = try #require(try await api.asSuperuser("select count(*)::int8 as n from diaries where id = \(diary.id) and closed_at is not null").first)
            #expect(try emptied.decode("n", as: Int.self) == 1)
        }
    }
}
