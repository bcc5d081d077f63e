import NIOCore

/// Sends a refused WebSocket upgrade's problem+json (401, 429) in place of the empty 400
/// that hummingbird-websocket writes for every refusal. It sits first in the pipeline, next
/// to the socket, and passes everything through until `refuse` is called for the
/// connection; then the next response it sees is replaced by the refusal, and what follows
/// is dropped (the connection closes after it).
final class UpgradeRefusalHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var refusal: ByteBuffer?
    private var sent = false

    func refuse(with response: ByteBuffer) {
        refusal = response
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard let refusal else {
            context.write(data, promise: promise)
            return
        }
        if sent {
            promise?.succeed(())
        } else {
            sent = true
            context.write(wrapOutboundOut(.byteBuffer(refusal)), promise: promise)
        }
    }
}
