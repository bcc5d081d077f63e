import DiaryCore
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore

/// The rules that close a socket from outside its delivery, which may be stuck in a write:
/// its subscription ended, its token expired, or its channel stayed unwritable (a client
/// that does not read) for `slowConsumerGrace`. They run on the channel's event loop, as a
/// callback, when an event may change their verdict (a change of writability, the
/// subscription's end, a renewal) and when a timer set for the next deadline fires; nothing
/// looks in between, and no task waits for them.
extension RealtimeSocket {
    struct Rules {
        /// Since when the channel has been unwritable.
        var fullSince: ContinuousClock.Instant?
        var timer: Scheduled<Void>?
        /// A rule closed the socket, or it ended: nothing more to check.
        var stopped = false
    }

    /// On the channel's event loop.
    func checkRules(outbound: WebSocketOutboundWriter, logger: Logger) {
        var state = rules.value
        guard !state.stopped else { return }
        state.timer?.cancel()
        state.timer = nil
        let closing = verdict(&state) { self.checkRules(outbound: outbound, logger: logger) }
        state.stopped = closing != nil
        rules.value = state
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
        state.timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(next / .nanoseconds(1)) + 1_000_000), again)
        return nil
    }

    /// On the channel's event loop, once the socket has ended.
    func stopRules() {
        rules.value.stopped = true
        rules.value.timer?.cancel()
        rules.value.timer = nil
    }
}
