import DiaryModels
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import PostgresClient
import TestSupport

/// A real WebSocket client on `/v1/realtime`, reading every text frame into a queue the test
/// awaits. `paused` holds reading back (a slow consumer) until `resume()`; `pausingAfter`
/// does so once that many text frames have come.
final class TestSocket: Sendable {
    enum Outgoing: Sendable {
        case text(String)
        case binary(Int)
    }

    private let outgoing: AsyncStream<Outgoing>.Continuation
    private let closing: Task<WebSocketCloseFrame?, any Error>
    private let consumed = NIOLockedValueBox(0)
    private let finished = NIOLockedValueBox(false)
    private let gate: AsyncStream<Void>.Continuation
    /// Set once the upgrade is done and the socket open, paused or not.
    private let connected = NIOLockedValueBox(false)
    /// Every text frame, in order, as it came.
    let frames = NIOLockedValueBox<[String]>([])

    init(port: Int, query: String = "", token: String?, paused: Bool = false, pausingAfter pauseAt: Int? = nil) {
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: Outgoing.self)
        let (gateStream, gate) = AsyncStream.makeStream(of: Void.self)
        if !paused { gate.yield() }
        self.outgoing = outgoing
        self.gate = gate
        let frames = self.frames
        let finished = self.finished
        let connected = self.connected
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        closing = Task {
            defer { finished.withLockedValue { $0 = true } }
            return try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/v1/realtime\(query)",
                configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers),
                logger: Logger(label: "test-socket")
            ) { inbound, outbound, _ in
                connected.withLockedValue { $0 = true }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await _ in gateStream { break }
                        for try await message in inbound.messages(maxSize: 1 << 22) {
                            if case .text(let text) = message {
                                let count = frames.withLockedValue { $0.append(text); return $0.count }
                                if count == pauseAt { for await _ in gateStream { break } }
                            }
                        }
                    }
                    group.addTask {
                        for await message in outgoingStream {
                            switch message {
                            case .text(let text): try await outbound.write(.text(text))
                            case .binary(let count): try await outbound.write(.binary(ByteBuffer(repeating: 1, count: count)))
                            }
                        }
                        // Closed by the test: say so, as an app does, so that the server's handler
                        // ends. An in-process server has no RealtimeDrain to close its sockets
                        // first, and its graceful shutdown waits for every connection.
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    func send(_ message: Outgoing) { outgoing.yield(message) }

    /// Waits until the upgrade is done: a paused socket reads no frame to tell it by.
    func waitUntilConnected(within limit: Duration = .seconds(15)) async throws {
        try await waitUntil("the socket is open", within: limit) { self.connected.withLockedValue { $0 } }
    }
    func resume() { gate.yield() }

    /// The next text frame, or nil if the socket closed first. The default wait is long:
    /// changes reach sockets once no older transaction in the cluster is open, and parallel
    /// suites hold snapshots for seconds (the schema test's pg_dump, the backups' pg_dump).
    func next(within limit: Duration = .seconds(30)) async throws -> String? {
        try await waitForValue("a frame", within: limit) { () -> String?? in
            let index = consumed.withLockedValue { $0 }
            if let frame = frames.withLockedValue({ index < $0.count ? $0[index] : nil }) {
                consumed.withLockedValue { $0 += 1 }
                return .some(frame)
            }
            return finished.withLockedValue { $0 } ? .some(nil) : nil
        }
    }

    /// Skips to the next change event of `type`.
    func event(_ type: ChangeType, within limit: Duration = .seconds(30)) async throws -> ChangeEvent {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard let text = try await next(within: deadline - .now) else { throw HarnessError("closed before \(type.rawValue)") }
            if let event = try? PostgresJSONCoding.decoder.decode(ChangeEvent.self, from: Data(text.utf8)), event.type == type { return event }
        }
        throw HarnessError("no \(type.rawValue) within \(limit)")
    }

    /// The next frame's `type` field ("ready", "resync", or an event type).
    func nextType(within limit: Duration = .seconds(30)) async throws -> String? {
        guard let text = try await next(within: limit) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["type"] as? String
    }

    /// Whether the connection has ended.
    var isFinished: Bool { finished.withLockedValue { $0 } }

    /// Waits for the server to close, and returns its close code.
    func closeCode(within limit: Duration = .seconds(15)) async throws -> WebSocketErrorCode? {
        try await withTimeLimit("the socket's close", within: limit) { try await self.closing.value?.closeCode }
    }

    /// Whether the server refused the upgrade.
    func refused() async -> Bool {
        do { _ = try await closing.value; return false } catch { return true }
    }

    func close() {
        outgoing.finish()
        closing.cancel()
    }
}

