import DiaryCore
import Foundation
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// The socket as hummingbird-websocket's handler runs it: the channel adopted, the handler's
/// task reading the client's frames (token renewals) until it leaves or a rule closes it. The
/// delivery and the rules write through `RealtimeOutbound` and need none of this: a handler at
/// the channel level replaces this file.
extension RealtimeSocket {
    static var serverConfiguration: WebSocketServerConfiguration {
        // The rules ping (`Options.pingPeriod`): the library's auto-ping is a task per socket.
        WebSocketServerConfiguration(maxFrameSize: Options.maxMessageBytes, autoPing: .disabled, closeTimeout: .seconds(5))
    }

    /// Reads of an idle socket are small, and none is larger than a frame may be.
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: Options.maxMessageBytes)

    /// Makes an upgraded channel a realtime socket's, on its event loop: the upgrade's refusal
    /// handler goes (it had nothing left to refuse), a `ChannelEventsHandler` that tells the
    /// rules takes its place, and reads use the small allocator.
    static func adopt(
        _ channel: any Channel, onWritabilityChange changed: @escaping @Sendable () -> Void, onRead heard: @escaping @Sendable () -> Void
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        if let refusal = try? pipeline.handler(type: UpgradeRefusalHandler.self) {
            _ = pipeline.removeHandler(refusal)
        }
        try pipeline.addHandler(ChannelEventsHandler(writabilityChanged: changed, heard: heard), position: .first)
        try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: receiveAllocator)
    }

    /// The socket's one task is the handler's, which reads the client's frames. A delivery
    /// runs as a task of its own only while there is something to write (`startDelivery`),
    /// and the rules run on the channel's event loop (`checkRules`): an idle socket holds no
    /// other task of ours, and none whose frames grew deep in a database read.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, logger: Logger) async {
        AppMetrics.recordRealtimeSocket(opened: true)
        defer {
            let delivery = state.withLockedValue { state in
                state.ended = true
                defer { state.delivery = nil }
                return state.delivery
            }
            delivery?.cancel()
            feed.unsubscribe(subscription)
            channel.eventLoop.execute { self.stopRules() }
            AppMetrics.recordRealtimeSocket(opened: false)
        }
        let check: @Sendable () -> Void = { channel.eventLoop.execute { self.checkRules(outbound: outbound, logger: logger) } }
        do {
            try await channel.eventLoop.submit {
                try Self.adopt(channel, onWritabilityChange: check, onRead: { self.heard() })
            }.get()
        } catch {
            logger.warning("realtime socket closes: its channel cannot be adopted", metadata: ["error": "\(error)"])
            return
        }
        subscription.onEnd(check)
        check()
        subscription.onArrival { self.startDelivery(outbound, logger: logger) }
        if let refused = await readFrames(inbound, renewed: check), close(refused, outbound: outbound, logger: logger, writing: false) {
            // Written before the handler returns, after which the library would close with 1000.
            _ = try? await outbound.close(refused.code, reason: refused.reason)
        }
    }

    /// The one message a client sends: `{"type": "auth", "accessToken": "…"}`, a renewed token.
    struct AuthMessage: Decodable, Equatable {
        var type: String
        var accessToken: String?

        /// The renewal a text frame holds, nil for any other text, which is ignored.
        static func renewal(in text: String) -> AuthMessage? {
            guard let message = try? JSONDecoder().decode(AuthMessage.self, from: Data(text.utf8)), message.type == "auth" else { return nil }
            return message
        }
    }

    /// Token renewals; everything else from the client is ignored, within limits.
    private func readFrames(_ inbound: WebSocketInboundStream, renewed: @Sendable () -> Void) async -> Closing? {
        var recent: [ContinuousClock.Instant] = []
        do {
            for try await message in inbound.messages(maxSize: Options.maxMessageBytes) {
                let now = ContinuousClock.now
                recent.append(now)
                if recent.count > options.maxFramesPerSecond {
                    recent.removeFirst(recent.count - options.maxFramesPerSecond - 1)
                    if now - recent[0] < .seconds(1) { return .flood }
                }
                switch message {
                case .binary:
                    return .binaryFrame
                case .text(let text):
                    guard let auth = AuthMessage.renewal(in: text) else { continue }
                    guard let token = auth.accessToken, let identity = try? await tokens.verifyAccessToken(token),
                          identity.userID == subscription.identity.userID else {
                        return .unauthorized("the renewed token is not valid for this user")
                    }
                    subscription.renew(identity)
                    renewed()
                }
            }
        } catch {
            // The library has closed the socket (1009, a broken connection).
        }
        return nil
    }
}
