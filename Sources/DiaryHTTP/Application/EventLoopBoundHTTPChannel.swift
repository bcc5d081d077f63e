import HummingbirdCore
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
struct EventLoopBoundHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let base: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop: value.channel.eventLoop)) {
            await base.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// `.http1()`, with each connection's task on its channel's event loop.
    static func eventLoopBoundHTTP1(configuration: HTTP1Channel.Configuration = .init()) -> HTTPServerBuilder {
        .init { responder in
            EventLoopBoundHTTPChannel(base: HTTP1Channel(responder: responder, configuration: configuration))
        }
    }
}
