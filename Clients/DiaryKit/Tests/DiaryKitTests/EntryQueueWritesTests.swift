import DiaryKit
import Foundation
import Testing

/// The queue carries edits, deletions and photo files as well as posts, in the order written.
@Suite("Offline entry queue: edits, deletions, photos")
struct EntryQueueWritesTests {
    @Test("a post, its edit, another post and its deletion, queued offline, reach the server in order")
    func editsAndDeletionsInOrder() async throws {
        try await LiveServer.with { server in
            let client = try await server.signedIn("aiko")
            let diary = try await client.createDiary(name: "offline edits", type: .friends)
            let queue = EntryQueue(client: client, store: InMemoryEntryQueueStore())
            let first = EntryDraft(diaryID: diary.id, content: "first draft")
            let second = EntryDraft(diaryID: diary.id, content: "never mind")
            // Nothing is sent until send(): an edit sent before its post would find no entry.
            try await queue.enqueue(first)
            try await queue.enqueueEdit(diaryID: diary.id, entryID: first.id.uuidString.lowercased(), content: "first, edited")
            try await queue.enqueue(second)
            try await queue.enqueueDeletion(diaryID: diary.id, entryID: second.id.uuidString.lowercased())
            #expect(try await queue.pending().map(\.content) == ["first draft", "first, edited", "never mind", nil])

            let outcomes = try await queue.send()
            #expect(outcomes.count == 4)
            #expect(outcomes.allSatisfy { if case .sent = $0 { true } else { false } }, "\(outcomes)")
            if case .sent(_, let edited?) = outcomes[1] { #expect(edited.content == "first, edited") } else { Issue.record("\(outcomes[1])") }
            #expect(try await client.timeline(diaryID: diary.id).entries.map(\.content) == ["first, edited"])
            #expect(try await queue.pending().isEmpty)

            // A deletion sent again (its answer lost) finds the entry gone: done, not refused.
            try await queue.enqueueDeletion(diaryID: diary.id, entryID: second.id.uuidString.lowercased())
            guard case .sent(_, nil)? = try await queue.send().first else {
                Issue.record("a repeated deletion was not taken as done")
                return
            }
        }
    }

    @Test("a queued post uploads its photo files when sent, attaches them, and deletes the files")
    func photoFilesGoWithThePost() async throws {
        try await LiveServer.with { server in
            let client = try await server.signedIn("aiko")
            let diary = try await client.createDiary(name: "offline photos", type: .friends)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("queued-\(UUID().uuidString).png")
            try UncompressedPNG.make(width: 40, height: 30).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let storeFile = EntryQueueTests.storeFile()
            defer { try? FileManager.default.removeItem(at: storeFile) }
            let queue = EntryQueue(client: client, store: FileEntryQueueStore(fileURL: storeFile))
            try await queue.enqueue(EntryDraft(diaryID: diary.id, content: "with a queued photo",
                                               photoFiles: [PhotoFile(fileURL: file, format: .png)]))
            let outcomes = try await queue.send()
            guard case .sent(_, let entry?)? = outcomes.first else {
                Issue.record("not sent: \(outcomes)")
                return
            }
            let photo = try #require(entry.photos.first)
            #expect(photo.width == 40 && photo.height == 30)
            #expect(!FileManager.default.fileExists(atPath: file.path), "the queue keeps a file it no longer needs")
            #expect(try await queue.pending().isEmpty)
        }
    }
}
