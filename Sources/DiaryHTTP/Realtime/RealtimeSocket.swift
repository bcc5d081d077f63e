import DiaryCore
import DiaryModels
import Foundation
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
    /// The socket's state, all of it: what the handler's task, a delivery and the rules share.
    let state: NIOLockedValueBox<State>

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
        self.state = NIOLockedValueBox(State(rules: Rules(nextPing: .now + options.pingPeriod)))
    }

    struct State {
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
        /// The rules' deadlines, changed on the channel's event loop alone (`RealtimeSocket+Rules`).
        var rules: Rules
    }

    /// What a socket reads itself, as its caller, rather than being handed it.
    enum Unread: Equatable, Sendable {
        /// These diaries' changes after the cursor; none: nothing.
        case diaries(Set<UUID>)
        /// Every diary of the caller: after `ready` at the `since` the client gave.
        case everyDiary

        static let nothing = Unread.diaries([])
    }

    /// Closes the socket for `closing`, or with 1000 for nil; true for the first call, which
    /// alone acts. A close decided outside the handler's task is written by a task of its
    /// own, while the handler reads on until the client answers it. The channel closes within
    /// `closeTimeout` whatever the client does. A slow consumer's close goes to the channel
    /// itself, behind what it holds: the writer may be waiting in a delivery's write, and
    /// then refuses it.
    @discardableResult
    func close(_ closing: Closing?, outbound: some RealtimeOutbound, logger: Logger, writing: Bool) -> Bool {
        let first = state.withLockedValue { state in
            defer { state.closing = true }
            return !state.closing && !state.ended
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
}
