import NIOCore

/// Tells a realtime socket when its channel's writability changes: the event its
/// slow-consumer rule waits on, so that no socket looks every so often. It sits first in an
/// upgraded socket's pipeline, where the upgrade's refusal handler was (`RealtimeSocket.adopt`).
final class WritabilityHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private let changed: @Sendable () -> Void

    init(changed: @escaping @Sendable () -> Void) {
        self.changed = changed
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        changed()
        context.fireChannelWritabilityChanged()
    }
}
