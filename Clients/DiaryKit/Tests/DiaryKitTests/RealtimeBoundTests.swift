import DiaryKit
import Foundation
import Testing

/// The realtime stream reads the socket only as fast as the app reads the stream, through a
/// socket the test provides behind `RealtimeTransport`, as an app's tests can.
@Suite("Realtime: bounded")
struct RealtimeBoundTests {
    /// A socket with 10,000 frames ready, which counts how many the stream pulled.
    final class FloodTransport: RealtimeTransport, @unchecked Sendable {
        private let lock = NSLock()
        private var pulledFrames = 0
        var pulled: Int { lock.withLock { pulledFrames } }

        func connect(to url: URL, headers: [String: String]) -> RealtimeConnection {
            let diaryID = UUID().uuidString.lowercased()
            let messages = AsyncThrowingStream<String, any Error> { [self] in
                let index = lock.withLock { pulledFrames += 1; return pulledFrames }
                if index == 1 { return #"{"type":"ready","cursor":"c0"}"# }
                if index > 10_000 { return nil }
                return #"{"id":"c\#(index)","type":"future.kind","diaryId":"\#(diaryID)","at":"2026-11-28T00:00:00.000000Z","data":{}}"#
            }
            return RealtimeConnection(messages: messages, send: { _ in }, close: {}, closeCode: { nil })
        }
    }

    @Test("an app that stops reading stops the socket's reads: nothing is buffered ahead of it")
    func nothingBufferedAhead() async throws {
        let transport = FloodTransport()
        let session = StoredSession(accessToken: "token", refreshToken: "refresh",
                                    accessTokenExpiresAt: Date().addingTimeInterval(3600), userID: "aiko")
        let client = DiaryClient(configuration: .init(serverURL: URL(string: "http://127.0.0.1:9")!,
                                                      sessionStorage: InMemorySessionStorage(session: session),
                                                      realtimeTransport: transport))
        var events = client.realtime().makeAsyncIterator()
        var delivered = 0
        for _ in 0..<50 {
            guard try await events.next() != nil else { break }
            delivered += 1
            // The frame the app took, and at most the one the stream holds for it next.
            #expect(transport.pulled <= delivered + 1, "pulled \(transport.pulled) frames for \(delivered) events")
        }
        #expect(delivered == 50)
        // The app stops reading. However long the loop is given, it pulls nothing more: this
        // cannot fail spuriously, and the unbounded stream this replaced failed it at once.
        for _ in 0..<2_000 { await Task.yield() }
        #expect(transport.pulled <= delivered + 1, "pulled \(transport.pulled) frames for \(delivered) events")
    }

    /// The socket Clients/DiaryKit/README.md shows an app's tests, as written there.
    final class ReplayedSocket: RealtimeTransport, @unchecked Sendable {
        private let lock = NSLock()
        private var frames: [String]    // e.g. #"{"type":"ready","cursor":"c0"}"#, then change events
        init(frames: [String]) { self.frames = frames }

        func connect(to url: URL, headers: [String: String]) -> RealtimeConnection {
            RealtimeConnection(
                messages: AsyncThrowingStream { self.lock.withLock { self.frames.isEmpty ? nil : self.frames.removeFirst() } },
                send: { _ in }, close: {}, closeCode: { 1000 })
        }
    }

    @Test("the README's replayed socket: its frames arrive as events, with no server")
    func readmeReplayedSocket() async throws {
        let readme = try String(contentsOf: PackageTests.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("messages: AsyncThrowingStream { self.lock.withLock { self.frames.isEmpty ? nil : self.frames.removeFirst() } },"),
                "the README's example and this copy have drifted")
        let diaryID = UUID().uuidString.lowercased()
        let client = DiaryClient(configuration: .init(
            serverURL: URL(string: "https://example.invalid")!,
            sessionStorage: InMemorySessionStorage(session: StoredSession(
                accessToken: "t", refreshToken: "r", accessTokenExpiresAt: .distantFuture, userID: "me")),
            realtimeTransport: ReplayedSocket(frames: [
                #"{"type":"ready","cursor":"c0"}"#,
                #"{"id":"c1","type":"entry.deleted","diaryId":"\#(diaryID)","at":"2026-11-28T00:00:00.000000Z","data":{"id":"e1"}}"#,
            ])))
        var events = client.realtime().makeAsyncIterator()
        guard case .connected(cursor: "c0")? = try await events.next() else { Issue.record("no ready"); return }
        guard case .change(let change)? = try await events.next(), case .entryDeleted(entryID: "e1") = change.kind else {
            Issue.record("no change")
            return
        }
        #expect(change.cursor == "c1" && change.diaryID == diaryID)
    }
}
