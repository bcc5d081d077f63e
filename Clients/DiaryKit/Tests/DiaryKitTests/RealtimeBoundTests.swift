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
}
