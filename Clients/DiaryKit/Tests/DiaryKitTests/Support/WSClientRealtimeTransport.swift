import AsyncAlgorithms
import DiaryKit
import Foundation
import HTTPTypes
import Logging
import NIOWebSocket
import WSClient

/// The tests' realtime socket: swift-websocket's client behind DiaryKit's `RealtimeTransport`,
/// because this machine's libcurl (Debian 12's 7.88) has no WebSocket for URLSession's task.
/// It keeps the protocol's promise: a frame is read from the socket only when the stream asks
/// for one, so a test that stops reading makes the server see a slow reader.
struct WSClientRealtimeTransport: RealtimeTransport {
    func connect(to url: URL, headers: [String: String]) -> RealtimeConnection {
        let frames = AsyncThrowingChannel<String, any Error>()
        let (outgoing, outbox) = AsyncStream<String>.makeStream()
        let closeCode = CloseCodeBox()
        var configuration = WebSocketClientConfiguration()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { configuration.additionalHeaders[field] = value }
        }
        configuration.maxFrameSize = 1 << 20
        let task = Task {
            do {
                let frame = try await WebSocketClient.connect(
                    url: url.absoluteString, configuration: configuration, logger: Logger(label: "DiaryKitTests.realtime")
                ) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outgoing { try await outbound.write(.text(text)) }
                        }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message { await frames.send(text) }
                        }
                        group.cancelAll()
                    }
                }
                await closeCode.set(frame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) })
                frames.finish()
            } catch {
                frames.fail(error)
            }
            outbox.finish()
        }
        let reader = FrameReader(frames.makeAsyncIterator())
        return RealtimeConnection(
            messages: AsyncThrowingStream { try await reader.next() },
            send: { text in outbox.yield(text) },
            close: { task.cancel(); outbox.finish(); frames.finish() },
            closeCode: { await closeCode.code })
    }
}

/// The one reader of a socket's frames.
private final class FrameReader: @unchecked Sendable {
    private var iterator: AsyncThrowingChannel<String, any Error>.AsyncIterator
    init(_ iterator: AsyncThrowingChannel<String, any Error>.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> String? { try await iterator.next() }
}

/// Holds a value set once from one task and read from another.
private actor CloseCodeBox {
    private(set) var code: Int?
    func set(_ code: Int?) { self.code = code }
}
