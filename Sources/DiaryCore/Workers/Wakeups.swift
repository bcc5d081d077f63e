import Logging
import PostgresClient

/// A background worker's (or a socket's) wake-ups: asked for any number of times, they fold
/// into one round pending, because a round does everything that is due anyway.
package struct Wakeups: Sendable {
    /// One element per round to run; ends with `finish()`.
    package let rounds: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    package init() {
        (rounds, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    package func wake() {
        continuation.yield()
    }

    /// Ends `rounds`, so that a loop over them returns.
    package func finish() {
        continuation.finish()
    }

    /// Wakes on every NOTIFY on `channel` until cancelled; the listener reconnects by itself,
    /// and the worker's poll covers what is missed meanwhile.
    func wakeOnNotify(_ channel: String, configuration: PostgresConfiguration, logger: Logger) async {
        for await _ in PostgresListener.notifications(configuration: configuration, channels: [channel], logger: logger) { wake() }
    }
}
