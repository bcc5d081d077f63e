public import Foundation

/// Opens the realtime socket. DiaryKit's own is `URLSessionRealtimeTransport`, over the
/// configuration's URLSession; an app's tests can put any socket behind this protocol (one
/// that replays recorded frames, say) through `DiaryClient.Configuration.realtimeTransport`.
public protocol RealtimeTransport: Sendable {
    /// Opens a socket to `url` sending `headers` with the upgrade (the bearer token). It
    /// returns at once: a refused upgrade ends `messages` by throwing.
    func connect(to url: URL, headers: [String: String]) -> RealtimeConnection
}

/// One open realtime socket, as the reconnecting stream above it sees every platform's socket.
/// `messages` must be read on demand (pulled from the socket as they are asked for, not
/// buffered ahead without bound): when the app stops reading, the server sees a slow reader
/// and closes the socket, and the stream resumes from the last change the app took.
public struct RealtimeConnection: Sendable {
    /// The server's text frames; ends when the socket closes, or throws when it could not
    /// open (the upgrade was refused) or broke.
    public var messages: AsyncThrowingStream<String, any Error>
    /// Sends a text frame.
    public var send: @Sendable (String) async throws -> Void
    /// Closes the socket from this side.
    public var close: @Sendable () async -> Void
    /// The close code the server sent, once `messages` has ended; nil when none came.
    public var closeCode: @Sendable () async -> Int?

    /// Creates a connection from its four parts.
    public init(messages: AsyncThrowingStream<String, any Error>, send: @escaping @Sendable (String) async throws -> Void,
                close: @escaping @Sendable () async -> Void, closeCode: @escaping @Sendable () async -> Int?) {
        self.messages = messages
        self.send = send
        self.close = close
        self.closeCode = closeCode
    }
}
