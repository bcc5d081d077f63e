import DiaryCore
import DiaryModels
import Foundation
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import PostgresClient

/// One realtime socket: `ready`, then the caller's changes after its cursor as they commit,
/// each read under the caller's own row-level policies (`ChangeLogRepository`), until the
/// client leaves or a rule closes it:
///
/// | close | when                                                                  |
/// |-------|-----------------------------------------------------------------------|
/// | 4401  | the session ended, the access token expired, or a renewal was refused |
/// | 4408  | the client has not read for `Options.slowConsumerGrace`               |
/// | 1001  | the server is stopping; also a ping unanswered for `Options.pingPeriod` |
/// | 1003  | a binary frame                                                        |
/// | 1008  | more than `Options.maxFramesPerSecond` frames in a second             |
/// | 1009  | a frame or message over 16 KiB                                        |
///
/// Memory per socket stays bounded: changes are read a page at a time, and only after the
/// previous page was handed to the channel, whose writes wait while its buffer is full.
struct RealtimeSocket: Sendable {
    /// A socket whose changes cannot be read waits this long before it reads again.
    static let databaseRetry = Backoff(base: .seconds(1), cap: .seconds(1))

    struct Options: Sendable {
        var maxFramesPerSecond = 10
        var slowConsumerGrace: Duration = .seconds(10)
        /// A ping goes out this often; a peer that sent nothing between one and the next is
        /// closed, within two periods.
        var pingPeriod: Duration = .seconds(25)
        var pageSize = 100
        /// How long after the read that returned it a change may still be written, whether the
        /// feed read it for every member (`Delivery`) or the socket read it itself: that read
        /// confirmed the session live, and the change's subject there. Later (the client paused
        /// reading meanwhile, or the database cannot be reached to confirm again), the socket
        /// reads on from the last change it wrote, as its caller, so that a session ended or a
        /// subject deleted since reaches nothing: the check fails closed.
        var freshness: Duration = .seconds(1)
        static let maxMessageBytes = 16 * 1024
        static let kernelSendBuffer = 64 * 1024
    }

    static var serverConfiguration: WebSocketServerConfiguration {
        // The rules ping (`Options.pingPeriod`): the library's auto-ping is a task per socket.
        WebSocketServerConfiguration(maxFrameSize: Options.maxMessageBytes, autoPing: .disabled, closeTimeout: .seconds(5))
    }

    enum Closing: Sendable {
        case unauthorized(String)
        case slowConsumer
        case shutdown
        case binaryFrame
        case flood
        case pingUnanswered

        var code: WebSocketErrorCode {
            switch self {
            case .unauthorized: .unknown(4401)
            case .slowConsumer: .unknown(4408)
            case .shutdown, .pingUnanswered: .goingAway
            case .binaryFrame: .unacceptableData
            case .flood: .policyViolation
            }
        }

        init(_ ending: ChangeSubscription.Ending) {
            switch ending {
            case .shutdown: self = .shutdown
            case .sessionEnded: self = .unauthorized("the session has ended")
            }
        }

        var number: Int {
            switch self {
            case .unauthorized: 4401
            case .slowConsumer: 4408
            case .shutdown, .pingUnanswered: 1001
            case .binaryFrame: 1003
            case .flood: 1008
            }
        }

        var reason: String {
            switch self {
            case .unauthorized(let why): why
            case .slowConsumer: "too slow to read; reconnect with since"
            case .shutdown: "server stopping"
            case .binaryFrame: "binary frames are not accepted"
            case .flood: "too many frames"
            case .pingUnanswered: "ping unanswered"
            }
        }
    }

    /// Where the subscription ends when the socket does.
    let feed: ChangeFeed
    let subscription: ChangeSubscription
    /// The change log as the socket's user sees it, on the requests' pool.
    let reader: ChangeSubscription.Reader
    let since: String?
    let tokens: TokenService
    let channel: any Channel
    let options: Options
    /// What the handler's task, a delivery and the rules share.
    let shared = NIOLockedValueBox(Shared())
    /// The rules' own state, on the channel's event loop (`RealtimeSocket+Rules`).
    let rules: NIOLoopBoundBox<Rules>

    init(
        feed: ChangeFeed, subscription: ChangeSubscription, reader: @escaping ChangeSubscription.Reader, since: String?, tokens: TokenService,
        channel: any Channel, options: Options
    ) {
        self.feed = feed
        self.subscription = subscription
        self.reader = reader
        self.since = since
        self.tokens = tokens
        self.channel = channel
        self.options = options
        self.rules = NIOLoopBoundBox.makeBoxSendingValue(Rules(nextPing: .now + options.pingPeriod), eventLoop: channel.eventLoop)
    }

    struct Shared {
        /// Set by the first close (`close`): nothing closes the socket twice.
        var closing = false
        /// The handler has returned: no delivery starts.
        var ended = false
        /// The delivery running, if one is (`RealtimeSocket+Delivery`); at most one.
        var delivery: Task<Void, Never>?
        var deliverAgain = false
        /// Where the socket stands, carried from one delivery to the next: nil before `ready`.
        var cursor: ChangeCursor?
        /// What the socket reads itself next.
        var unread = Unread.nothing
    }

    /// What a socket reads itself, as its caller, rather than being handed it.
    enum Unread: Equatable, Sendable {
        /// These diaries' changes after the cursor; none: nothing.
        case diaries(Set<UUID>)
        /// Every diary of the caller: after `ready` at the `since` the client gave.
        case everyDiary

        static let nothing = Unread.diaries([])
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
            let delivery = shared.withLockedValue { shared in
                shared.ended = true
                defer { shared.delivery = nil }
                return shared.delivery
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

    /// Closes the socket for `closing`, or with 1000 for nil; true for the first call, which
    /// alone acts. A close decided outside the handler's task is written by a task of its
    /// own, while the handler reads on until the client answers it. The channel closes within
    /// `closeTimeout` whatever the client does. A slow consumer's close goes to the channel
    /// itself, behind what it holds: the writer may be waiting in a delivery's write, and
    /// then refuses it.
    @discardableResult
    func close(_ closing: Closing?, outbound: WebSocketOutboundWriter, logger: Logger, writing: Bool) -> Bool {
        let first = shared.withLockedValue { shared in
            defer { shared.closing = true }
            return !shared.closing && !shared.ended
        }
        guard first else { return false }
        if let closing {
            AppMetrics.recordRealtimeClose(closing)
            logger.info("realtime socket closing", metadata: ["code": "\(closing.number)", "reason": "\(closing.reason)", "user": "\(subscription.identity.userID)"])
        }
        let channel = channel
        channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        switch closing {
        case .slowConsumer:
            var data = channel.allocator.buffer(capacity: 2 + Closing.slowConsumer.reason.utf8.count)
            data.write(webSocketErrorCode: Closing.slowConsumer.code)
            data.writeString(Closing.slowConsumer.reason)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)).whenComplete { _ in
                channel.close(promise: nil)
            }
        case let closing?:
            if writing { Task { _ = try? await outbound.close(closing.code, reason: closing.reason) } }
        case nil:
            if writing { Task { _ = try? await outbound.close(.normalClosure, reason: nil) } }
        }
        return true
    }

    /// The socket's first frame: where it stands.
    static func readyFrame(_ cursor: ChangeCursor) -> String {
        #"{"type":"ready","cursor":"\#(cursor.encoded)"}"#
    }

    /// After a resync the socket goes on from the diaries' positions now, which the frame
    /// carries: the client reloads its diaries and resumes from there.
    static func resyncFrame(_ cursor: ChangeCursor) -> String {
        #"{"type":"resync","cursor":"\#(cursor.encoded)"}"#
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
