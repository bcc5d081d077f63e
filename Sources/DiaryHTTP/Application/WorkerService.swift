import ServiceLifecycle

/// A background worker's loop run beside the HTTP server: the feed, push delivery and
/// reminders, the photo sweeper, Apple's revocations. Its loop ends when cancelled, which
/// graceful shutdown does; each worker's pool is listed after it in the service group, so
/// that the pool closes once its worker has stopped.
struct WorkerService: Service {
    let loop: @Sendable () async -> Void

    init(_ loop: @escaping @Sendable () async -> Void) {
        self.loop = loop
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await loop() }
    }
}
