import DiaryKit
import Foundation
import Testing

/// The README's core flow, through DiaryKit alone, against the live server.
@Suite("Core flow")
struct CoreFlowTests {
    @Test("sign in, create a diary, invite and join, post with a client id, read the timeline, mark read")
    func coreFlow() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let ren = try await server.signedIn("ren")
            let aikoMe = try await aiko.me()
            #expect(aikoMe.displayName == "aiko")

            let diary = try await aiko.createDiary(name: "ふたりの日記", type: .couple)
            #expect(diary.name == "ふたりの日記")
            #expect(diary.type == .couple)
            #expect(diary.inviteURL.hasSuffix("/i/\(diary.inviteCode)"))
            #expect(diary.role == .owner)

            let joined = try await ren.joinDiary(inviteCode: diary.inviteCode)
            #expect(joined.id == diary.id)
            #expect(joined.memberCount == 2)
            #expect(joined.role == .member)

            let draft = EntryDraft(diaryID: diary.id, content: "今日は晴れ")
            let entry = try await aiko.post(draft)
            // The server spells UUIDs in capitals; compare them as UUIDs.
            #expect(UUID(uuidString: entry.id) == draft.id)
            #expect(entry.isMine)
            // Microseconds survive the round trip: the server wrote six digits.
            #expect(abs(entry.createdAt.timeIntervalSinceNow) < 60)

            let again = try await aiko.post(draft)
            #expect(again.id == entry.id && again.createdAt == entry.createdAt, "a replay returns the entry already written")

            let page = try await ren.timeline(diaryID: diary.id)
            #expect(page.entries.map(\.id) == [entry.id])
            #expect(page.entries.first?.isMine == false)
            #expect(page.changesCursor != nil)

            try await ren.markRead(diaryID: diary.id, entryID: entry.id)
            try await ren.markRead(diaryID: diary.id, entryID: entry.id)
            let reads = try await aiko.reads(diaryID: diary.id, entryID: entry.id)
            #expect(reads.count == 1)
            let renID = try #require(await ren.userID)
            #expect(reads.first?.userID == renID)

            let list = try await ren.diaries()
            #expect(list.map(\.id) == [diary.id])
        }
    }

    @Test("an edit leaves out what it does not change; clearQuestion clears the question alone")
    func clearQuestion() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let diary = try await aiko.createDiary(name: "問いの日記", type: .family)
            let entry = try await aiko.post(EntryDraft(diaryID: diary.id, content: "朝ごはん", question: "今日の朝ごはんは?"))
            #expect(entry.question == "今日の朝ごはんは?")
            let edited = try await aiko.editEntry(diaryID: diary.id, entryID: entry.id, content: "朝ごはんはパン")
            #expect(edited.content == "朝ごはんはパン" && edited.question == "今日の朝ごはんは?", "a nil question leaves it as it was")
            let cleared = try await aiko.clearQuestion(diaryID: diary.id, entryID: entry.id)
            #expect(cleared.question == nil && cleared.content == "朝ごはんはパン")
            #expect(try await aiko.entry(diaryID: diary.id, entryID: entry.id).question == nil)
            let after = try await aiko.editEntry(diaryID: diary.id, entryID: entry.id, question: "昼ごはんは?")
            #expect(after.question == "昼ごはんは?", "only the clearing call sends the null")
        }
    }

    @Test("problems arrive typed, with their stable codes")
    func typedProblems() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let first = try await aiko.createDiary(name: "one", type: .family)
            await #expect(throws: DiaryError.self) { _ = try await aiko.joinDiary(inviteCode: "NOPE-NOPE") }
            do {
                _ = try await aiko.joinDiary(inviteCode: "NOPE-NOPE")
            } catch let error as DiaryError {
                #expect(error.code == .inviteCodeInvalid)
            }
            do {
                _ = try await aiko.createDiary(name: "two", type: .family)
                Issue.record("a second diary on the free plan was created")
            } catch let error as DiaryError {
                #expect(error.code == .premiumRequired)
                guard case .problem(let problem) = error else { throw error }
                #expect(problem.status == 403)
            }
            do {
                _ = try await aiko.post(EntryDraft(diaryID: first.id, content: ""))
                Issue.record("an empty entry was posted")
            } catch let error as DiaryError {
                #expect(error.code == .validationFailed)
            }
            let stranger = try await server.signedIn("stranger")
            do {
                _ = try await stranger.timeline(diaryID: first.id)
                Issue.record("a stranger read the timeline")
            } catch let error as DiaryError {
                #expect(error.code == .notFound)
            }
        }
    }
}
