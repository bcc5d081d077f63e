import Logging
import PostgresClient

/// A background worker's loops (its work, its wake-ups, its checks and gauges), run together
/// until the task is cancelled or one of them ends; then the others are cancelled and
/// `wakeups` finished, so that a loop over its rounds returns. A worker with more than one loop runs them here.
func runWorkerLoops(_ loops: [@Sendable () async -> Void], finishing wakeups: Wakeups) async {
    await withTaskGroup(of: Void.self) { group in
        for loop in loops { group.addTask { await loop() } }
        await group.next()
        group.cancelAll()
    }
    wakeups.finish()
}

extension Wakeups {
    /// The two loops that wake a worker: every NOTIFY on `channel` (the listener reconnects
    /// by itself), and a poll every `interval` for what a NOTIFY missed or a backoff made due.
    func wakers(channel: String, listen: PostgresConfiguration, polling interval: Duration, startingAtOnce: Bool = false, logger: Logger) -> [@Sendable () async -> Void] {
        [
            { await self.wakeOnNotify(channel, configuration: listen, logger: logger) },
            { await repeating(every: interval, startingAtOnce: startingAtOnce) { self.wake() } },
        ]
    }
}

/// One round of a worker's work: a failure is logged, and the next round tries again;
/// cancellation (the server stopping) is quiet.
func loggingFailure(of what: String, logger: Logger, _ body: () async throws -> Void) async {
    do {
        try await body()
    } catch is CancellationError {
        return
    } catch {
        logger.error("\(what) failed; the next one tries again", metadata: ["error": "\(error)"])
    }
}
