import NIOCore

/// Tells a realtime socket's rules of the events they wait on, so that no socket looks
/// every so often: a change of writability (the slow-consumer rule), and bytes from the
/// client (the ping rule: a pong, or anything, says the peer is there). It sits first in an
/// upgraded socket's pipeline, where the upgrade's refusal handler was (`RealtimeSocket.adopt`).
final class ChannelEventsHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private let writabilityChanged: @Sendable () -> Void
    private let heard: @Sendable () -> Void

    init(writabilityChanged: @escaping @Sendable () -> Void, heard: @escaping @Sendable () -> Void) {
        self.writabilityChanged = writabilityChanged
        self.heard = heard
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        heard()
        context.fireChannelRead(data)
    }
}
