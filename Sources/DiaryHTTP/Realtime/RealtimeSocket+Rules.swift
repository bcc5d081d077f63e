import DiaryCore
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// The rules that close a socket from outside its delivery, which may be stuck in a write:
/// its subscription ended, its token expired, its channel stayed unwritable (a client that
/// does not read) for `slowConsumerGrace`, or the peer sent nothing, not even a pong, in a
/// ping period after a ping. They also send the pings. They run on the channel's event
/// loop, as a callback, when an event may change their verdict (a change of writability,
/// the subscription's end, a renewal) and when a timer set for the next deadline fires;
/// nothing looks in between, and no task waits for them.
extension RealtimeSocket {
    struct Rules {
        /// Since when the channel has been unwritable.
        var fullSince: ContinuousClock.Instant?
        /// When the next ping goes out, and the last went.
        var nextPing: ContinuousClock.Instant
        var pinged: ContinuousClock.Instant?
        /// When the client last sent anything.
        var heard: ContinuousClock.Instant?
        var timer: Scheduled<Void>?
        /// A rule closed the socket, or it ended: nothing more to check.
        var stopped = false
    }

    /// On the channel's event loop.
    func checkRules(outbound: some RealtimeOutbound, logger: Logger) {
        channel.eventLoop.preconditionInEventLoop()
        var rules = state.withLockedValue { $0.rules }
        guard !rules.stopped else { return }
        rules.timer?.cancel()
        rules.timer = nil
        let closing = verdict(&rules) { self.checkRules(outbound: outbound, logger: logger) }
        rules.stopped = closing != nil
        state.withLockedValue { [rules] in $0.rules = rules }
        if let closing { close(closing, outbound: outbound, logger: logger, writing: true) }
    }

    /// The rule that closes the socket now, if one does; else a timer for the next deadline.
    private func verdict(_ state: inout Rules, again: @escaping @Sendable () -> Void) -> Closing? {
        if let ending = subscription.ending { return Closing(ending) }
        let now = ContinuousClock.now
        let untilExpiry = Duration.milliseconds(Int64(min(subscription.identity.expiresAt.timeIntervalSinceNow, 3600) * 1000))
        if untilExpiry <= .zero { return .unauthorized("the access token has expired") }
        var next = untilExpiry
        if channel.isWritable {
            state.fullSince = nil
        } else {
            let since = state.fullSince ?? now
            state.fullSince = since
            let untilSlow = options.slowConsumerGrace - (now - since)
            if untilSlow <= .zero { return .slowConsumer }
            next = min(next, untilSlow)
        }
        if now >= state.nextPing {
            if let pinged = state.pinged, (state.heard ?? pinged) <= pinged { return .pingUnanswered }
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()), promise: nil)
            state.pinged = now
            state.nextPing = now + options.pingPeriod
        }
        next = min(next, state.nextPing - now)
        state.timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(next / .nanoseconds(1)) + 1_000_000), again)
        return nil
    }

    /// On the channel's event loop: the client sent something.
    func heard() {
        channel.eventLoop.preconditionInEventLoop()
        state.withLockedValue { $0.rules.heard = .now }
    }

    /// On the channel's event loop, once the socket has ended.
    func stopRules() {
        channel.eventLoop.preconditionInEventLoop()
        let timer = state.withLockedValue { state in
            state.rules.stopped = true
            defer { state.rules.timer = nil }
            return state.rules.timer
        }
        timer?.cancel()
    }
}
