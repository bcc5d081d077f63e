#if canImport(WSClient)
import Foundation
import HTTPTypes
import Logging
import NIOWebSocket
import WSClient

extension RealtimeSocket {
    /// Opens the socket with swift-websocket's client (Linux, where URLSession has no
    /// WebSocket), authenticated with the bearer header.
    static func open(url: URL, bearer: String) -> RealtimeSocket {
        let (messages, incoming) = AsyncThrowingStream<String, any Error>.makeStream()
        let (outgoing, outbox) = AsyncStream<String>.makeStream()
        let closeCode = CloseCodeBox()
        var configuration = WebSocketClientConfiguration()
        configuration.additionalHeaders[.authorization] = "Bearer \(bearer)"
        configuration.maxFrameSize = 1 << 20
        let task = Task {
            do {
                let frame = try await WebSocketClient.connect(
                    url: url.absoluteString, configuration: configuration, logger: Logger(label: "DiaryKit.realtime")
                ) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outgoing { try await outbound.write(.text(text)) }
                        }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message { incoming.yield(text) }
                        }
                        group.cancelAll()
                    }
                }
                await closeCode.set(frame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) })
                incoming.finish()
            } catch {
                incoming.finish(throwing: error)
            }
            outbox.finish()
        }
        return RealtimeSocket(
            messages: messages,
            send: { text in outbox.yield(text) },
            close: { task.cancel(); outbox.finish() },
            closeCode: { await closeCode.code })
    }
}
#endif
