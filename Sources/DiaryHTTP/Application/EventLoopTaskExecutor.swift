import NIOCore

/// A NIO event loop as a Swift task executor (see `EventLoopBoundHTTPChannel`).
///
/// Unowned jobs hold no reference to their executor: the closure keeps this one alive
/// until the job has run.
final class EventLoopTaskExecutor: TaskExecutor, Sendable {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
