import AsyncAlgorithms
import DiaryAPI
import Foundation

/// The caller's changes as they happen, over the realtime socket: an `AsyncSequence` that
/// connects when iterated, renews the token on the open socket before it expires, reconnects
/// with backoff, resumes from the last change delivered (no gap, no repeat), and after a
/// `resync` catches every diary up through delta sync. It ends by throwing
/// `DiaryError.sessionEnded` when the session is over, and when the iterating task is cancelled.
///
/// Nothing is buffered ahead of the app: the socket is read only as fast as the app takes
/// events. An app that does not keep up makes the server see a slow reader, which closes the
/// socket (`.disconnected(.tooSlow, …)`); the stream reconnects at once from the last change
/// the app took, and the server's `resync`, if it no longer has that far back, is repaired by
/// delta sync. Memory stays bounded however far behind the app falls.
public struct RealtimeUpdates: AsyncSequence, Sendable {
    /// One delivery.
    public typealias Element = RealtimeEvent

    let client: DiaryClient
    let since: String?
    let diaryCursors: [String: String]
    let options: RealtimeOptions

    /// Iterates the events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingChannel<RealtimeEvent, any Error>.AsyncIterator
        let connection: Connection

        /// The next event; nil once iteration was cancelled.
        public mutating func next() async throws -> RealtimeEvent? {
            let connection = self.connection
            return try await withTaskCancellationHandler { try await base.next() } onCancel: { connection.stop() }
        }
    }

    /// The connection loop of one iteration: stopped when the iterating task is cancelled or
    /// the iterator is dropped.
    final class Connection: Sendable {
        let task: Task<Void, Never>
        init(_ task: Task<Void, Never>) { self.task = task }
        func stop() { task.cancel() }
        deinit { task.cancel() }
    }

    /// Starts the connection loop for this iteration.
    public func makeAsyncIterator() -> AsyncIterator {
        let events = AsyncThrowingChannel<RealtimeEvent, any Error>()
        let loop = RealtimeLoop(client: client, cursor: since, diaryCursors: diaryCursors, options: options, events: events)
        let task = Task { await loop.run() }
        return AsyncIterator(base: events.makeAsyncIterator(), connection: Connection(task))
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

    /// Connects every realtime stream that is waiting out its backoff at once. Call it when the
    /// app returns to the foreground (`scenePhase` becomes `.active`) and when the network comes
    /// back (`NWPathMonitor` reports `.satisfied`): the stream's backoff grows to
    /// `RealtimeOptions.maximumBackoff` while the phone is offline, and would otherwise be waited out.
    public func reconnectRealtimeNow() {
        realtimeWakeup.wakeAll()
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
