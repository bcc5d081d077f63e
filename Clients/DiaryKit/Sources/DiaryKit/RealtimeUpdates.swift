import DiaryAPI
import Foundation

/// The caller's changes as they happen, over the realtime socket: an `AsyncSequence` that
/// connects when iterated, renews the token on the open socket before it expires, reconnects
/// with backoff, resumes from the last change delivered (no gap, no repeat), and after a
/// `resync` catches every diary up through delta sync. It ends by throwing
/// `DiaryError.sessionEnded` when the session is over, and when the iterating task is cancelled.
public struct RealtimeUpdates: AsyncSequence, Sendable {
    /// One delivery.
    public typealias Element = RealtimeEvent

    let client: DiaryClient
    let since: String?
    let diaryCursors: [String: String]
    let options: RealtimeOptions

    /// Iterates the events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<RealtimeEvent, any Error>.AsyncIterator

        /// The next event; nil once iteration was cancelled.
        public mutating func next() async throws -> RealtimeEvent? { try await base.next() }
    }

    /// Starts the connection loop for this iteration.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream<RealtimeEvent, any Error>.makeStream()
        let loop = RealtimeLoop(client: client, cursor: since, diaryCursors: diaryCursors, options: options,
                                continuation: continuation)
        let task = Task { await loop.run() }
        continuation.onTermination = { _ in task.cancel() }
        return AsyncIterator(base: stream.makeAsyncIterator())
    }
}

extension DiaryClient {
    /// The caller's changes, live. Pass the last cursor held (`RealtimeEvent.connected`'s, or
    /// the last change's) to resume after it, and each diary's last cursor so a `resync` can
    /// catch it up by delta sync rather than reload it.
    public func realtime(since cursor: String? = nil, diaryCursors: [String: String] = [:],
                         options: RealtimeOptions = RealtimeOptions()) -> RealtimeUpdates {
        RealtimeUpdates(client: self, since: cursor, diaryCursors: diaryCursors, options: options)
    }

    /// The socket's URL: the server's, with ws(s) for http(s), resuming after `cursor`.
    func realtimeURL(since cursor: String?) -> URL {
        var components = URLComponents(url: configuration.serverURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = components.path.trimmingSuffix("/") + "/v1/realtime"
        components.queryItems = cursor.map { [URLQueryItem(name: "since", value: $0)] }
        return components.url!
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
