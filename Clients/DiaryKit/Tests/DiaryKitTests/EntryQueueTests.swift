import DiaryKit
import Foundation
import Testing

/// The offline queue: drafts survive a "crash" (a new client and queue over the same store),
/// go out in order, and a retry after a lost answer or a lost forget posts nothing twice.
@Suite("Offline entry queue")
struct EntryQueueTests {
    static func storeFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("diarykit-queue-\(UUID().uuidString).json")
    }

    @Test("only a verdict on the draft drops it: a code added later, a proxy's answer without one, sign-in and updates keep it")
    func onlyVerdictsDrop() {
        for verdict: ProblemCode in [.validationFailed, .readOnlyField, .forbidden, .notFound, .entryIDConflict, .premiumRequired, .payloadTooLarge, .photoInUse] {
            #expect(verdict.refusesTheDraft, "\(verdict)")
        }
        for kept: ProblemCode in [.unknown(""), .unknown("added_later"), .unauthorized, .tokenExpired, .upgradeRequired, .maintenance, .serviceUnavailable, .rateLimited, .internal, .tooManyDiaries] {
            #expect(!kept.refusesTheDraft, "\(kept)")
        }
    }

    @Test("drafts queued before a crash are sent, in order, by a new client over the same store")
    func survivesCrash() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            let before = server.client(storage: storage)
            try await before.signInForDevelopment(name: "aiko")
            let diary = try await before.createDiary(name: "offline", type: .friends)
            let file = Self.storeFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let drafts = (1...3).map { EntryDraft(diaryID: diary.id, content: "entry \($0)") }
            do {
                let queue = EntryQueue(client: before, store: FileEntryQueueStore(fileURL: file))
                for draft in drafts { try await queue.enqueue(draft) }
            }
            // The app is killed here: nothing was sent. A new launch makes everything anew.
            let after = server.client(storage: storage)
            let queue = EntryQueue(client: after, store: FileEntryQueueStore(fileURL: file))
            #expect(try await queue.pending().map(\.id) == drafts.map(\.id))
            let outcomes = try await queue.send()
            let sent = outcomes.compactMap { outcome -> String? in
                if case .sent(_, let entry?) = outcome { return entry.content }
                return nil
            }
            #expect(sent == ["entry 1", "entry 2", "entry 3"])
            #expect(try await queue.pending().isEmpty)
            let timeline = try await after.timeline(diaryID: diary.id)
            #expect(timeline.entries.map(\.content) == ["entry 3", "entry 2", "entry 1"])
        }
    }

    @Test("a draft sent but not forgotten (crash after the answer) is sent again without a duplicate")
    func retryMakesNoDuplicate() async throws {
        try await LiveServer.with { server in
            let client = try await server.signedIn("aiko")
            let diary = try await client.createDiary(name: "retry", type: .friends)
            let draft = EntryDraft(diaryID: diary.id, content: "once only")
            // The first send reached the server, but its answer was lost: the draft is still queued.
            let first = try await client.post(draft)
            let store = InMemoryEntryQueueStore()
            let queue = EntryQueue(client: client, store: store)
            try await queue.enqueue(draft)
            let outcomes = try await queue.send()
            guard case .sent(_, let entry?)? = outcomes.first else {
                Issue.record("not sent: \(outcomes)")
                return
            }
            #expect(entry.id == first.id)
            #expect(try await client.timeline(diaryID: diary.id).entries.count == 1)

            // The same id with other content is refused for good, and dropped from the queue.
            try await queue.enqueue(EntryDraft(id: draft.id, diaryID: diary.id, content: "something else"))
            let conflict = try await queue.send()
            guard case .rejected(_, let problem)? = conflict.first else {
                Issue.record("not rejected: \(conflict)")
                return
            }
            #expect(problem.code == .entryIDConflict)
            #expect(try await queue.pending().isEmpty)
        }
    }

    @Test("a rejected draft does not hold back the next; an unreachable server keeps all pending, in order")
    func rejectedAndPending() async throws {
        try await LiveServer.with { server in
            // async-http-client retries a refused connection until the request's deadline: a
            // short one keeps the offline sends short.
            let client = server.client(requestTimeout: .seconds(2))
            try await client.signInForDevelopment(name: "aiko")
            let diary = try await client.createDiary(name: "mixed", type: .friends)
            let queue = EntryQueue(client: client, store: InMemoryEntryQueueStore(),
                                   retryPolicy: .init(attempts: 2, initialBackoff: .milliseconds(50)))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: ""))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "kept"))
            let outcomes = try await queue.send()
            #expect(outcomes.count == 2)
            if case .rejected(_, let problem)? = outcomes.first { #expect(problem.code == .validationFailed) } else { Issue.record("\(outcomes)") }
            if case .sent? = outcomes.last {} else { Issue.record("\(outcomes)") }

            try await server.stop()
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "offline 1"))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "offline 2"))
            let offline = try await queue.send()
            #expect(offline.count == 2)
            #expect(offline.allSatisfy { if case .pending = $0 { true } else { false } })
            #expect(try await queue.pending().map(\.content) == ["offline 1", "offline 2"])

            try await server.launch()
            let online = try await queue.send()
            #expect(online.allSatisfy { if case .sent = $0 { true } else { false } })
            #expect(try await client.timeline(diaryID: diary.id).entries.map(\.content) == ["offline 2", "offline 1", "kept"])
        }
    }
}
