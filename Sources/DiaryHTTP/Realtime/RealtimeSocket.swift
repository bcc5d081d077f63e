import DiaryCore
import DiaryModels
import Foundation
import HummingbirdWebSocket
import Logging
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
/// | 1001  | the server is stopping; also a ping unanswered for a ping period      |
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
        var pageSize = 100
        static let maxMessageBytes = 16 * 1024
        static let kernelSendBuffer = 64 * 1024
    }

    static var serverConfiguration: WebSocketServerConfiguration {
        // A dead peer is closed one ping period after an unanswered ping: 50 s at most.
        WebSocketServerConfiguration(maxFrameSize: Options.maxMessageBytes, autoPing: .enabled(timePeriod: .seconds(25)), closeTimeout: .seconds(5))
    }

    enum Closing: Sendable {
        case unauthorized(String)
        case slowConsumer
        case shutdown
        case binaryFrame
        case flood

        var code: WebSocketErrorCode {
            switch self {
            case .unauthorized: .unknown(4401)
            case .slowConsumer: .unknown(4408)
            case .shutdown: .goingAway
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
            case .shutdown: 1001
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
            }
        }
    }

    let subscription: ChangeSubscription
    /// The change log as the socket's user sees it, on the requests' pool.
    let reader: ChangeSubscription.Reader
    let since: String?
    let tokens: TokenService
    let channel: any Channel
    let options: Options

    /// Reads of an idle socket are small, and none is larger than a frame may be.
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: Options.maxMessageBytes)

    /// Makes an upgraded channel a realtime socket's, on its event loop: the upgrade's refusal
    /// handler goes (it had nothing left to refuse), a `WritabilityHandler` that wakes `watch`
    /// takes its place, and reads use the small allocator.
    static func adopt(_ channel: any Channel, waking watch: Wakeups) throws {
        let pipeline = channel.pipeline.syncOperations
        if let refusal = try? pipeline.handler(type: UpgradeRefusalHandler.self) {
            _ = pipeline.removeHandler(refusal)
        }
        try pipeline.addHandler(WritabilityHandler { watch.wake() }, position: .first)
        try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: receiveAllocator)
    }

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, logger: Logger) async {
        AppMetrics.recordRealtimeSocket(opened: true)
        defer {
            subscription.cancel()
            AppMetrics.recordRealtimeSocket(opened: false)
        }
        // What the watch waits on: a change of writability, the subscription's end, a renewal.
        let watched = Wakeups()
        subscription.onEnd { watched.wake() }
        do {
            try await channel.eventLoop.submit { try Self.adopt(channel, waking: watched) }.get()
        } catch {
            logger.warning("realtime socket closes: its channel cannot be adopted", metadata: ["error": "\(error)"])
            return
        }
        await withTaskGroup(of: Closing?.self) { group in
            group.addTask { await deliver(outbound, logger: logger) }
            group.addTask { await readFrames(inbound, renewed: watched) }
            group.addTask { await watch(watched) }
            let closing = await group.next() ?? nil
            group.cancelAll()
            guard let closing else { return }
            AppMetrics.recordRealtimeClose(closing)
            logger.info("realtime socket closing", metadata: ["code": "\(closing.number)", "reason": "\(closing.reason)", "user": "\(subscription.identity.userID)"])
            // A client that does not read cannot take the close frame either: give up after a while.
            let closed = await withTaskGroup(of: Bool.self) { closer in
                closer.addTask {
                    guard case .slowConsumer = closing else { return (try? await outbound.close(closing.code, reason: closing.reason)) != nil }
                    // The cancelled delivery may have been waiting in the writer, which then
                    // refuses the close: it goes to the channel itself, behind what it holds.
                    var data = channel.allocator.buffer(capacity: 2 + closing.reason.utf8.count)
                    data.write(webSocketErrorCode: closing.code)
                    data.writeString(closing.reason)
                    return (try? await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))) != nil
                }
                closer.addTask { (try? await Task.sleep(for: .seconds(5))) == nil }
                let first = await closer.next() ?? false
                closer.cancelAll()
                return first
            }
            // After a close written past the library, its handshake is not awaited.
            if case .slowConsumer = closing {
                _ = try? await channel.close()
            } else if !closed {
                _ = try? await channel.close()
            }
        }
    }

    private func repository() -> ChangeLogRepository {
        subscription.countOwnRead()
        return reader(subscription.identity)
    }

    /// After a resync the socket goes on from the diaries' positions now, which the frame
    /// carries: the client reloads its diaries and resumes from there.
    static func resyncFrame(_ cursor: ChangeCursor) -> String {
        #"{"type":"resync","cursor":"\#(cursor.encoded)"}"#
    }

    /// `ready`, an optional `resync`, the changes after `since` in every diary, then, each
    /// time the feed wakes it, the changes it was handed (`Delivery`), and those of the
    /// diaries it names, which it reads itself: one statement a diary.
    private func deliver(_ outbound: WebSocketOutboundWriter, logger: Logger) async -> Closing? {
        var arrivals = subscription.arrivals.makeAsyncIterator()
        var cursor: ChangeCursor
        /// What to read next: nil for every diary of the caller.
        var unread: Set<UUID>? = []
        var handed: [Delivery] = []
        do {
            var resync = false
            if let since {
                if let parsed = ChangeCursor(since) { cursor = parsed; unread = nil } else { cursor = try await repository().position(); resync = true }
            } else {
                cursor = try await repository().position()
            }
            try await outbound.write(.text(#"{"type":"ready","cursor":"\#(cursor.encoded)"}"#))
            if resync { try await outbound.write(.text(Self.resyncFrame(cursor))) }
        } catch let error as DomainError where error.reason == .unauthenticated {
            return Closing(.sessionEnded)
        } catch {
            logger.warning("realtime socket could not start", metadata: ["error": "\(error)"])
            return nil
        }
        while !Task.isCancelled {
            if let ending = subscription.ending { return Closing(ending) }
            if unread != [] {
                do {
                    let outcome = if let diaries = unread {
                        try await repository().changes(after: cursor, inDiaries: diaries, limit: options.pageSize)
                    } else {
                        try await repository().changes(after: cursor, limit: options.pageSize)
                    }
                    switch outcome {
                    case .resyncRequired:
                        cursor = try await repository().position()
                        try await outbound.write(.text(Self.resyncFrame(cursor)))
                        unread = []
                        continue
                    case .page(let page):
                        for event in page.events {
                            try await outbound.writeTextMessage(String(decoding: try StreamingJSONEncoder().encode(event), as: UTF8.self))
                        }
                        AppMetrics.recordRealtimeEvents(page.events.count)
                        cursor = page.next
                        if page.hasMore { continue }
                        unread = []
                    }
                } catch let error as DomainError where error.reason == .unauthenticated {
                    return Closing(.sessionEnded)
                } catch let error as PostgresError {
                    // The database is away: keep the socket, try again shortly.
                    logger.warning("realtime socket cannot read changes", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: Self.databaseRetry.delay(attempt: 1))
                    continue
                } catch {
                    logger.warning("realtime socket closes: its changes cannot be read", metadata: ["error": "\(error)"])
                    return nil
                }
            }
            if !handed.isEmpty {
                var behind = Set<UUID>()
                do {
                    for delivery in handed where !(try await write(delivery, after: &cursor, to: outbound)) {
                        behind.insert(delivery.diary)
                    }
                } catch {
                    logger.warning("realtime socket closes: a change cannot be written", metadata: ["error": "\(error)"])
                    return nil
                }
                handed = []
                if !behind.isEmpty {
                    unread = behind
                    continue
                }
            }
            guard let arrival = await arrivals.next() else { return nil }
            unread = arrival.diaries
            handed = arrival.deliveries
        }
        return nil
    }

    /// Writes the changes of `delivery` after the socket's own position in its diary, each
    /// with the socket's cursor as its id; false, writing nothing, when the socket has not
    /// reached where the delivery begins (or never read the diary), and must read it itself.
    private func write(_ delivery: Delivery, after cursor: inout ChangeCursor, to outbound: WebSocketOutboundWriter) async throws -> Bool {
        guard let position = cursor[delivery.diary], position >= delivery.after else { return false }
        var written = 0
        for change in delivery.changes where change.position > position {
            cursor[delivery.diary] = change.position
            let frame = try change.frame(for: subscription.userID) { try StreamingJSONEncoder().encode($0) }
            try await writeText(Self.withID(cursor.encoded, frame, orEncoding: change.event(for: subscription.userID)), to: outbound)
            written += 1
        }
        cursor[delivery.diary] = max(cursor[delivery.diary] ?? position, delivery.through)
        AppMetrics.recordRealtimeEvents(written)
        return true
    }

    static let emptyID = Array(#"{"id":"""#.utf8)

    /// The shared frame with `id` written into its empty id; encoded anew, with the id, should
    /// the shared bytes not begin as the encoder writes an event.
    static func withID(_ id: String, _ frame: [UInt8], orEncoding event: ChangeEvent) throws -> ByteBuffer {
        guard frame.starts(with: emptyID) else {
            var event = event
            event.id = id
            return ByteBuffer(bytes: try StreamingJSONEncoder().encode(event))
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(frame.count + id.utf8.count)
        buffer.writeBytes(frame[..<(emptyID.count - 1)])
        buffer.writeString(id)
        buffer.writeBytes(frame[(emptyID.count - 1)...])
        return buffer
    }

    /// A text message in frames of at most `Options.maxMessageBytes`, as `writeTextMessage`
    /// writes a string.
    private func writeText(_ message: ByteBuffer, to outbound: WebSocketOutboundWriter) async throws {
        var rest = message
        var opcode = WebSocketOpcode.text
        repeat {
            let part = rest.readSlice(length: min(rest.readableBytes, Options.maxMessageBytes))!
            try await outbound.write(.custom(WebSocketFrame(fin: rest.readableBytes == 0, opcode: opcode, data: part)))
            opcode = .continuation
        } while rest.readableBytes > 0
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
    private func readFrames(_ inbound: WebSocketInboundStream, renewed: Wakeups) async -> Closing? {
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
                    renewed.wake()
                }
            }
        } catch {
            // The library has closed the socket (1009, a broken connection).
        }
        return nil
    }

    /// The rules that close a socket from outside its delivery, which may be stuck in a write:
    /// its subscription ended, its token expired, or its channel stayed unwritable (a client
    /// that does not read) for `slowConsumerGrace`. Woken only by those events and by a timer
    /// on the channel's event loop set for the next deadline; it never looks in between.
    private func watch(_ watched: Wakeups) async -> Closing? {
        var events = watched.rounds.makeAsyncIterator()
        var fullSince: ContinuousClock.Instant?
        var timer: Scheduled<Void>?
        defer { timer?.cancel() }
        while !Task.isCancelled {
            if let ending = subscription.ending { return Closing(ending) }
            let now = ContinuousClock.now
            let untilExpiry = Duration.milliseconds(Int64(min(subscription.identity.expiresAt.timeIntervalSinceNow, 3600) * 1000))
            if untilExpiry <= .zero { return .unauthorized("the access token has expired") }
            var next = untilExpiry
            if channel.isWritable {
                fullSince = nil
            } else {
                let since = fullSince ?? now
                fullSince = since
                let untilSlow = options.slowConsumerGrace - (now - since)
                if untilSlow <= .zero { return .slowConsumer }
                next = min(next, untilSlow)
            }
            timer?.cancel()
            timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(next / .nanoseconds(1)) + 1_000_000)) { watched.wake() }
            guard await events.next() != nil else { return nil }
        }
        return nil
    }
}
