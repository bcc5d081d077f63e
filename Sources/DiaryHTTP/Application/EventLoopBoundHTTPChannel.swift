import HummingbirdCore
import Logging
import NIOCore

/// HTTP/1 connections whose tasks run on the event loop that owns their socket.
///
/// On Swift's global executor, a request crossed threads twice more than it must: from
/// the event loop that read it to an executor thread, and back to write the answer. On
/// two shared cores each crossing is a wake-up, and at half load most threads are asleep
/// when work arrives. Measured at half the timeline's maximum rate (Benchmarks/results,
/// 2026-11-23): p50 1.3–1.6 ms against 1.8–2.2 ms, p99 5.1–6.2 against 6.9–7.9 ms.
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
