import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// HTTP/1 connections whose tasks run on the event loop that owns their socket.
///
/// On Swift's global executor, a request would cross threads twice more than it must:
/// from the event loop that read it to an executor thread, and back to write the answer.
/// Each crossing is a wake-up, and at moderate load most threads are asleep when work
/// arrives, so the crossings show in the latency.
///
/// Handlers may suspend but never block: the pool sends without blocking, waits on its
/// own threads, and opens connections on a thread pool.
struct EventLoopBoundHTTPChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            // First, next to the socket: it must see the refusal of an upgrade as bytes.
            try channel.pipeline.syncOperations.addHandler(UpgradeRefusalHandler(), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop: value.channel.eventLoop)) {
            await base.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with the realtime WebSocket upgrade (`RealtimeGateway`), each connection's
    /// task on its channel's event loop.
    static func eventLoopBoundHTTP1(configuration: HTTP1Channel.Configuration = .init(), realtime: RealtimeGateway) -> HTTPServerBuilder {
        .init { responder in
            EventLoopBoundHTTPChannel(base: HTTP1WebSocketUpgradeChannel(
                responder: responder,
                configuration: .init(http1: configuration, ws: RealtimeSocket.serverConfiguration),
                shouldUpgrade: { head, channel, logger in try await realtime.shouldUpgrade(head, channel: channel, logger: logger) }
            ))
        }
    }
}
