@testable import DiaryKit
import Foundation
import Testing

/// The realtime stream against the live socket: live changes, resume after the server
/// restarts, `resync` recovered by delta sync, and the session's end.
@Suite("Realtime")
struct RealtimeTests {
    /// Reads a stream's events from a task of its own, so a test can wait for what it expects.
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [RealtimeEvent] = []
        private var ending: (any Error)?
        private var ended = false
        private var task: Task<Void, Never>?

        init(_ updates: RealtimeUpdates) {
            task = Task {
                do {
                    for try await event in updates { self.lock.withLock { self.recorded.append(event) } }
                    self.lock.withLock { self.ended = true }
                } catch {
                    self.lock.withLock { self.ended = true; self.ending = error }
                }
            }
        }

        var events: [RealtimeEvent] { lock.withLock { recorded } }
        var finished: (ended: Bool, error: (any Error)?) { lock.withLock { (ended, ending) } }

        /// The contents of the entries created so far, in order of delivery.
        var createdContents: [String] {
            events.compactMap { event in
                if case .change(let change) = event, case .entryCreated(let entry) = change.kind { return entry.content }
                return nil
            }
        }

        var connections: Int {
            events.filter { if case .connected = $0 { true } else { false } }.count
        }

        func waitFor(_ what: String, within limit: Duration = .seconds(20), _ condition: @escaping (Recorder) -> Bool) async throws {
            try await waitUntil(what, within: limit) { condition(self) }
        }

        func stop() { task?.cancel() }
    }

    @Test("a member's entry arrives live, typed")
    func liveChange() async throws {
        try await LiveServer.with { server in
            let (aiko, ren, diary) = try await server.couple("live")
            let recorder = Recorder(aiko.realtime())
            defer { recorder.stop() }
            try await recorder.waitFor("the socket opens") { $0.connections == 1 }
            let entry = try await ren.post(EntryDraft(diaryID: diary.id, content: "おはよう"))
            try await recorder.waitFor("the entry arrives") { $0.createdContents == ["おはよう"] }
            try await ren.markRead(diaryID: diary.id, entryID: entry.id)
            _ = try await aiko.renameDiary(id: diary.id, to: "renamed")
            try await recorder.waitFor("the rename arrives") { recorder in
                recorder.events.contains { event in
                    if case .change(let change) = event, case .diaryUpdated(let updated) = change.kind { return updated.name == "renamed" }
                    return false
                }
            }
        }
    }

    @Test("after the server restarts, the stream reconnects and resumes with no gap and no repeat")
    func resumeAfterRestart() async throws {
        try await LiveServer.with { server in
            let (aiko, ren, diary) = try await server.couple("restart")
            let recorder = Recorder(aiko.realtime(options: .init(initialBackoff: .milliseconds(300), maximumBackoff: .seconds(1))))
            defer { recorder.stop() }
            try await recorder.waitFor("the socket opens") { $0.connections == 1 }
            _ = try await ren.post(EntryDraft(diaryID: diary.id, content: "before"))
            try await recorder.waitFor("the first entry") { $0.createdContents == ["before"] }

            try await server.stop()
            try await recorder.waitFor("the disconnection is reported") { recorder in
                recorder.events.contains { if case .disconnected = $0 { true } else { false } }
            }
            try await server.launch()
            // Written while aiko's socket may still be down: the resumed socket replays it.
            _ = try await ren.post(EntryDraft(diaryID: diary.id, content: "while away"))
            try await recorder.waitFor("the stream reconnects") { $0.connections >= 2 }
            _ = try await ren.post(EntryDraft(diaryID: diary.id, content: "after"))
            try await recorder.waitFor("every entry, once, in order") { $0.createdContents.count >= 3 }
            #expect(recorder.createdContents == ["before", "while away", "after"])
        }
    }

    @Test("back in the foreground or online, the stream reconnects at once instead of waiting out its backoff")
    func reconnectNow() async throws {
        try await LiveServer.with { server in
            let (aiko, ren, diary) = try await server.couple("foreground")
            // A backoff far longer than the test waits: only reconnectRealtimeNow() can reconnect in time.
            let recorder = Recorder(aiko.realtime(options: .init(initialBackoff: .seconds(600), maximumBackoff: .seconds(600))))
            defer { recorder.stop() }
            try await recorder.waitFor("the socket opens") { $0.connections == 1 }
            try await server.stop()
            try await recorder.waitFor("the disconnection is reported") { recorder in
                recorder.events.contains { if case .disconnected = $0 { true } else { false } }
            }
            try await server.launch()
            _ = try await ren.post(EntryDraft(diaryID: diary.id, content: "while in the background"))
            aiko.reconnectRealtimeNow()
            try await recorder.waitFor("the stream reconnects at once", within: .seconds(30)) { $0.connections >= 2 }
            try await recorder.waitFor("the missed entry arrives") { $0.createdContents == ["while in the background"] }
        }
    }

    @Test("resync: an unknown cursor is recovered by delta sync from each diary's cursor, or a reload")
    func resyncRecovery() async throws {
        try await LiveServer.with { server in
            let (aiko, ren, followed) = try await server.couple("followed")
            let cursor = try #require(try await aiko.diary(id: followed.id).changesCursor)
            _ = try await ren.post(EntryDraft(diaryID: followed.id, content: "missed"))

            let recorder = Recorder(aiko.realtime(since: "unknowncursor0", diaryCursors: [followed.id: cursor]))
            defer { recorder.stop() }
            try await recorder.waitFor("the missed entry, by delta sync") { $0.createdContents == ["missed"] }
            _ = try await ren.post(EntryDraft(diaryID: followed.id, content: "live"))
            try await recorder.waitFor("the live entry") { $0.createdContents.count >= 2 }
            #expect(recorder.createdContents == ["missed", "live"])

            // A diary without a cursor is reloaded whole.
            let unfollowed = Recorder(aiko.realtime(since: "unknowncursor0"))
            defer { unfollowed.stop() }
            try await unfollowed.waitFor("the diary reloaded") { recorder in
                recorder.events.contains { event in
                    if case .reloaded(let diary, let page) = event { return diary.id == followed.id && page.entries.count == 2 }
                    return false
                }
            }

            // Delta sync alone: an unknown cursor reloads, a fresh one returns the changes since.
            var unknown = aiko.catchUp(diaryID: followed.id, from: "unknowncursor0").makeAsyncIterator()
            guard case .reloaded(_, _, let fresh)? = try await unknown.next() else {
                Issue.record("an unknown cursor did not reload")
                return
            }
            _ = try await ren.post(EntryDraft(diaryID: followed.id, content: "later"))
            // The server answers the post before every reader sees its commit.
            try await waitUntil("delta sync returns the new entry", within: .seconds(10)) {
                var changes: [DiaryChange] = []
                for try await step in aiko.catchUp(diaryID: followed.id, from: fresh, pageSize: 1) {
                    guard case .changes(let page, _) = step else { throw LiveServerError("a fresh cursor reloaded") }
                    #expect(page.count <= 1)
                    changes += page
                }
                return changes.contains { if case .entryCreated(let entry) = $0.kind { entry.content == "later" } else { false } }
            }
        }
    }

    @Test("the token is renewed on the open socket before it expires, and the socket stays open")
    func renewalOnOpenSocket() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            let ren = try await server.signedIn("ren")
            let aikoSignIn = server.client(storage: storage)
            try await aikoSignIn.signInForDevelopment(name: "aiko")
            let diary = try await aikoSignIn.createDiary(name: "renewal", type: .couple)
            _ = try await ren.joinDiary(inviteCode: diary.inviteCode)
            // Told the token expires in 31 s, with a renewal margin of 30 s: the renewal is due
            // within a second, and DiaryKit's own 30 s refresh margin makes it a new token.
            var session = try #require(await storage.loadSession())
            session.accessTokenExpiresAt = Date().addingTimeInterval(31)
            let aiko = server.client(storage: InMemorySessionStorage(session: session))
            let recorder = Recorder(aiko.realtime(options: .init(renewalMargin: .seconds(30))))
            defer { recorder.stop() }
            try await recorder.waitFor("the socket opens") { $0.connections == 1 }
            try await waitUntil("the renewal refreshes the token", within: .seconds(10)) {
                await aiko.authority.refreshCount == 1
            }
            _ = try await ren.post(EntryDraft(diaryID: diary.id, content: "after the renewal"))
            try await recorder.waitFor("the entry arrives on the same socket") { $0.createdContents == ["after the renewal"] }
            #expect(recorder.connections == 1)
            #expect(!recorder.events.contains { if case .disconnected = $0 { true } else { false } })
        }
    }

    @Test("the session's end closes the socket (4401) and ends the stream with sessionEnded")
    func sessionEnd() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            let phone = server.client(storage: storage)
            try await phone.signInForDevelopment(name: "aiko")
            let copy: StoredSession = try #require(await storage.loadSession())
            let tablet = server.client(storage: InMemorySessionStorage(session: copy))
            let recorder = Recorder(tablet.realtime(options: .init(initialBackoff: .milliseconds(100))))
            defer { recorder.stop() }
            try await recorder.waitFor("the socket opens") { $0.connections == 1 }
            try await phone.signOut()
            try await recorder.waitFor("the stream ends", within: .seconds(20)) { $0.finished.ended }
            #expect({ if case DiaryError.sessionEnded? = recorder.finished.error as? DiaryError { true } else { false } }(), "\(String(describing: recorder.finished.error))")
            #expect(recorder.events.contains { if case .disconnected(.authenticationExpired, _) = $0 { true } else { false } })
        }
    }
}
