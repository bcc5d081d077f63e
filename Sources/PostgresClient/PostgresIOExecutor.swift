import NIOConcurrencyHelpers

/// The pool's I/O threads as one task executor.
///
/// A job enqueued from one of the I/O threads stays on that thread: a task resumed by
/// the answer to its query carries on where the answer was read, with no hand-over,
/// and the pool then lends it a connection that thread serves. Jobs from elsewhere (a
/// new task, a resumption by an event loop) go to the threads in turn.
final class PostgresIOExecutor: TaskExecutor, Sendable {
    private let drivers: [PostgresIODriver]
    private let next = NIOLockedValueBox(0)

    init(drivers: [PostgresIODriver]) {
        precondition(!drivers.isEmpty)
        self.drivers = drivers
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let current = PostgresIODriver.current
        let driver = drivers.first { $0 === current } ?? drivers[next.withLockedValue { index in
            defer { index = (index + 1) % drivers.count }
            return index
        }]
        // The job runs as this executor's, so that the task, which prefers this executor,
        // is already where it wants to be and does not hop again at its next suspension point.
        driver.enqueue(UnownedJob(job), on: asUnownedTaskExecutor())
    }
}
