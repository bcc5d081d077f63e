import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// Where a realtime socket's messages go: the line between what the socket writes (its
/// delivery's frames and its closes, which know nothing of the handler that reads the
/// client) and the handler. Pings and a slow consumer's close go to the channel itself.
/// hummingbird-websocket's writer is one (`RealtimeSocket+Handler`); a handler at the
/// channel level is another, and takes this line as it is.
protocol RealtimeOutbound: Sendable {
    /// One text message, in frames of at most `RealtimeSocket.Options.maxMessageBytes`: each
    /// write waits while the channel's buffer is full.
    func writeText(_ message: ByteBuffer) async throws
    /// The close frame; the handler closes the channel once the client answers.
    func close(_ code: WebSocketErrorCode, reason: String?) async throws
}

extension WebSocketOutboundWriter: RealtimeOutbound {
    func writeText(_ message: ByteBuffer) async throws {
        var rest = message
        var opcode = WebSocketOpcode.text
        repeat {
            let part = rest.readSlice(length: min(rest.readableBytes, RealtimeSocket.Options.maxMessageBytes))!
            try await write(.custom(WebSocketFrame(fin: rest.readableBytes == 0, opcode: opcode, data: part)))
            opcode = .continuation
        } while rest.readableBytes > 0
    }
}
