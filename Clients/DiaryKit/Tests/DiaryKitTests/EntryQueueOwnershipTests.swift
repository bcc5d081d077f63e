import DiaryKit
import Foundation
import Testing

/// Drafts belong to the user who wrote them: never sent as another user, never sent at all
/// when they name nobody (queued before DiaryKit 2.0), and a store that cannot be read is an
/// error, not an empty queue.
@Suite("Offline entry queue: whose drafts")
struct EntryQueueOwnershipTests {
    @Test("after a switch of accounts, A's drafts are not sent as B; they go out as A when A is back")
    func draftsStayWithTheirUser() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            let phone = server.client(storage: storage)
            try await phone.signInForDevelopment(name: "aiko")
            let diary = try await phone.createDiary(name: "shared", type: .friends)
            let kenji = try await server.signedIn("kenji")
            _ = try await kenji.joinDiary(inviteCode: diary.inviteCode)

            let queue = EntryQueue(client: phone, store: InMemoryEntryQueueStore())
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "written by aiko"))
            try await phone.signOut()
            try await phone.signInForDevelopment(name: "kenji")
            #expect(try await queue.pending().isEmpty)
            #expect(try await queue.send().isEmpty)
            #expect(try await kenji.timeline(diaryID: diary.id).entries.isEmpty)

            try await phone.signOut()
            try await phone.signInForDevelopment(name: "aiko")
            let outcomes = try await queue.send()
            guard case .sent(_, let entry?)? = outcomes.first else {
                Issue.record("not sent: \(outcomes)")
                return
            }
            #expect(entry.author.displayName == "aiko")
        }
    }

    @Test("drafts that name no user are never sent on their own; claimed, they are; discarded, they are gone")
    func unclaimedDraftsWait() async throws {
        try await LiveServer.with { server in
            let client = try await server.signedIn("aiko")
            let diary = try await client.createDiary(name: "old drafts", type: .friends)
            // A file as DiaryKit 1 wrote it: drafts without a user.
            let file = EntryQueueTests.storeFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let old = [UUID(), UUID()]
            try Data("""
            [{"id":"\(old[0])","diaryID":"\(diary.id)","content":"from before","photoIDs":[]},
             {"id":"\(old[1])","diaryID":"\(diary.id)","content":"unwanted","question":null,"photoIDs":[]}]
            """.utf8).write(to: file)
            let queue = EntryQueue(client: client, store: FileEntryQueueStore(fileURL: file))
            #expect(try await queue.unclaimed().map(\.id) == old)
            #expect(try await queue.pending().isEmpty)
            #expect(try await queue.send().isEmpty)
            #expect(try await client.timeline(diaryID: diary.id).entries.isEmpty)

            try await queue.claim(old[0])
            try await queue.discard(old[1])
            let outcomes = try await queue.send()
            #expect(outcomes.count == 1)
            if case .sent(_, let entry?)? = outcomes.first { #expect(entry.content == "from before") } else { Issue.record("\(outcomes)") }
            #expect(try await queue.unclaimed().isEmpty)
            #expect(try await client.timeline(diaryID: diary.id).entries.map(\.content) == ["from before"])
        }
    }

    @Test("a store that cannot be read throws from send and pending; it is not an empty queue")
    func unreadableStoreThrows() async throws {
        try await LiveServer.with { server in
            let client = try await server.signedIn("aiko")
            let file = EntryQueueTests.storeFile()
            defer { try? FileManager.default.removeItem(at: file) }
            try Data("[{\"id\": \"half a dr".utf8).write(to: file)
            let queue = EntryQueue(client: client, store: FileEntryQueueStore(fileURL: file))
            await #expect(throws: (any Error).self) { try await queue.send() }
            await #expect(throws: (any Error).self) { try await queue.pending() }
            await #expect(throws: (any Error).self) { try await queue.enqueue(EntryDraft(diaryID: "d", content: "x")) }
        }
    }

    @Test("cancelling the caller stops the send: the draft in flight and those after it stay pending")
    func cancellingStopsTheSend() async throws {
        try await LiveServer.with { server in
            let client = server.client(requestTimeout: .seconds(2))
            try await client.signInForDevelopment(name: "aiko")
            let diary = try await client.createDiary(name: "background", type: .friends)
            try await server.stop()
            // Offline, this policy would keep one send trying for minutes.
            let queue = EntryQueue(client: client, store: InMemoryEntryQueueStore(),
                                   retryPolicy: .init(attempts: 1_000, initialBackoff: .seconds(30), maximumBackoff: .seconds(30)))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "first"))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "second"))
            let send = Task { try await queue.send() }
            send.cancel()
            let outcomes = try await send.value
            #expect(outcomes.count == 2)
            #expect(outcomes.allSatisfy { if case .pending = $0 { true } else { false } })
            #expect(try await queue.pending().map(\.content) == ["first", "second"])
        }
    }
}
