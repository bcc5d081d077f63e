import Foundation

/// One open realtime socket: the text frames the server sends, and a way to send one.
/// Platform sockets (URLSession's on Apple's platforms, swift-websocket's elsewhere) are
/// adapted to it, so the reconnecting stream above is written once.
struct RealtimeSocket: Sendable {
    /// The server's text frames; ends when the socket closes, or throws when it could not
    /// open (the upgrade was refused) or broke.
    let messages: AsyncThrowingStream<String, any Error>
    /// Sends a text frame.
    let send: @Sendable (String) async throws -> Void
    /// Closes the socket from this side.
    let close: @Sendable () async -> Void
    /// The close code the server sent, once `messages` has ended; nil when none came.
    let closeCode: @Sendable () async -> Int?
}

/// Holds a value set once from one task and read from another.
actor CloseCodeBox {
    private(set) var code: Int?
    func set(_ code: Int?) { self.code = code }
}
