internal import CLibPQ
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Waits for the answers of every pooled connection on one thread, with epoll.
///
/// A pipeline is sent from the caller's own thread: in non-blocking mode libpq only
/// copies into its buffer and writes what the socket takes, so nothing blocks. Only
/// the wait for the answer needs a thread, and one serves every connection, as in
/// pgbench. A statement then costs one wake-up of this thread, where a thread blocked
/// on each connection would cost a hop there and a hop back.
///
/// Each socket joins the epoll set once, edge-triggered, for the life of its
/// connection: a statement then costs no `epoll_ctl`, and input that arrives while
/// the connection is idle is remembered, so a lease checks the socket only then.
///
/// The thread is also a `TaskExecutor`. A task that prefers it sends, waits and resumes
/// on this one thread, as pgbench does: an answer then wakes nobody else, where a task
/// on the global executor costs a hand-over to another thread per statement.
final class PostgresIODriver: TaskExecutor, Sendable {
    /// One pipeline in flight. Unchecked because `reader` is mutable: only whoever holds
    /// its watch's lock touches it, and whoever takes it out of the queue resumes the continuation.
    fileprivate final class InFlight: @unchecked Sendable {
        let connection: LibPQConnection
        var reader: PipelineReader
        let continuation: CheckedContinuation<[PostgresRows], any Error>

        init(connection: LibPQConnection, reader: PipelineReader, continuation: CheckedContinuation<[PostgresRows], any Error>) {
            self.connection = connection
            self.reader = reader
            self.continuation = continuation
        }
    }

    /// One connection's socket in the epoll set, and the pipelines sent on it, oldest first.
    ///
    /// Its lock is held around every libpq call on the connection, by whoever sends and by
    /// the driver's thread when it reads, since libpq is not safe to call from two threads
    /// at once. Several pipelines may be in flight on one connection (`PostgresPool`'s
    /// shared pipelines): each ends with its own sync, and the answers come back in order.
    final class Watch: Sendable {
        fileprivate struct Queue {
            var jobs: CircularBuffer<InFlight> = []
            /// Input arrived while nothing was in flight: on an idle connection, the server's goodbye.
            var unreadInput = false
            /// EPOLLOUT is in the mask only while a flush is unfinished: on a Unix socket
            /// every read by the server would otherwise wake the driver.
            var wantsWritable = false
        }

        let token: UInt64
        let socket: Int32
        fileprivate let queue = NIOLockedValueBox(Queue())

        init(token: UInt64, socket: Int32) {
            self.token = token
            self.socket = socket
        }
    }

    private struct State {
        /// True when the driver's thread must be woken to see new work; the thread is then awake.
        mutating func wake() -> Bool {
            defer { sleeping = false }
            return sleeping
        }

        var watches: [UInt64: Watch] = [:]
        var nextToken: UInt64 = 1
        /// Watches whose answers libpq read while sending, so that no edge will announce them.
        var ready: [Watch] = []
        /// Jobs of tasks that prefer this executor, run between epoll waits.
        var jobs: [(UnownedJob, UnownedTaskExecutor)] = []
        /// The thread is in (or about to enter) a blocking epoll_wait; enqueuers must wake it.
        var sleeping = false
        var stopped = false
        /// Pipelines sent so far.
        var sentPipelines = 0
    }

    private static let wakeupToken: UInt64 = 0
    private let epoll: Int32
    private let wakeup: Int32
    private let state = NIOLockedValueBox(State())

    /// Pipelines sent so far: each is one network round trip to the server.
    var roundTrips: Int { state.withLockedValue { $0.sentPipelines } }

    /// The driver whose thread the caller runs on, if any.
    private static let onThread = ThreadSpecificVariable<PostgresIODriver>()
    static var current: PostgresIODriver? { onThread.currentValue }


    init(index: Int) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wakeup >= 0, "cannot create the postgres I/O driver's epoll set: errno \(errno)")
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeupToken))
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event) == 0, "cannot watch the wake-up descriptor: errno \(errno)")
        let thread = Thread { [self] in
            // Named from inside: on Linux, a name set before start does not reach the kernel,
            // and the thread would show in ps and perf under its creator's name.
            Thread.current.name = "postgres-io-\(index)"
            Self.onThread.currentValue = self
            loop()
            Self.onThread.currentValue = nil
        }
        thread.start()
    }

    /// Sends the statements as one pipeline and suspends until the sync answers.
    func run(_ statements: [PostgresQuery], on connection: LibPQConnection) async throws -> [PostgresRows] {
        try await withCheckedThrowingContinuation { continuation in
            do {
                let watch = try self.watch(connection)
                let serviceNow = try watch.queue.withLockedValue { queue -> Bool in
                    guard !connection.isCondemned else {
                        throw PostgresError(kind: .connectionFailure, sqlState: SQLState("08006"), message: "the connection failed while another pipeline used it")
                    }
                    let reader = try connection.startPipeline(statements)
                    // An unfinished flush needs the socket's writability.
                    if try !connection.flush(), !queue.wantsWritable {
                        try setWritable(true, for: watch)
                        queue.wantsWritable = true
                    }
                    queue.jobs.append(InFlight(connection: connection, reader: reader, continuation: continuation))
                    // libpq reads while a write is blocked: an answer it already holds will
                    // announce itself with no edge, so the driver must look without one.
                    defer { queue.unreadInput = false }
                    return !connection.isBusy || queue.unreadInput
                }
                // Nothing throws after this: the job is in its watch, and whoever takes it out resumes it.
                enum Next { case wait, signal, stopped }
                let next = state.withLockedValue { state -> Next in
                    state.sentPipelines += 1
                    if state.stopped { return .stopped }
                    guard serviceNow else { return .wait }
                    state.ready.append(watch)
                    return state.wake() ? .signal : .wait
                }
                switch next {
                case .wait: break
                case .signal: signal()
                case .stopped: abandon(watch)
                }
            } catch {
                connection.condemn()
                continuation.resume(throwing: error)
            }
        }
    }

    /// The connection's watch, adding its socket to the epoll set on its first pipeline
    /// or after it reconnected to a new socket. Under the lock, because two shared
    /// pipelines may be the first on a connection at once; input that arrives before the
    /// socket joins the set is reported when it joins.
    private func watch(_ connection: LibPQConnection) throws -> Watch {
        let (watch, isNew) = state.withLockedValue { state -> (Watch, Bool) in
            if let watch = connection.watch { return (watch, false) }
            let watch = Watch(token: state.nextToken, socket: connection.socket)
            state.nextToken += 1
            state.watches[watch.token] = watch
            connection.watch = watch
            return (watch, true)
        }
        guard isNew else { return watch }
        var event = epoll_event(events: EPOLLIN.rawValue | EPOLLET.rawValue, data: epoll_data_t(u64: watch.token))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, watch.socket, &event) == 0 else {
            throw PostgresError(kind: .connectionFailure, message: "cannot wait on the connection's socket: errno \(errno)")
        }
        return watch
    }

    /// Whether input arrived on the idle connection since its last pipeline; clears the mark.
    func takeUnreadInput(_ connection: LibPQConnection) -> Bool {
        guard let watch = state.withLockedValue({ _ in connection.watch }) else { return false }
        return watch.queue.withLockedValue { queue in
            defer { queue.unreadInput = false }
            return queue.unreadInput
        }
    }

    /// Forgets a connection the pool drops or reconnects; closing its socket leaves the epoll set.
    /// Called by the connection's lessee, or by the pool once nobody leases it.
    func unwatch(_ connection: LibPQConnection) {
        state.withLockedValue { state in
            guard let watch = connection.watch else { return }
            connection.watch = nil
            state.watches.removeValue(forKey: watch.token)
        }
    }

    deinit {
        // Here, not when the loop ends: a late `epoll_ctl` must never reach a closed, reused descriptor.
        close(epoll)
        close(wakeup)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job), on: asUnownedTaskExecutor())
    }

    /// Runs `job` on this thread as a job of `executor` (this driver, or the group it belongs to).
    func enqueue(_ job: UnownedJob, on executor: UnownedTaskExecutor) {
        let (stopped, mustSignal) = state.withLockedValue { state -> (Bool, Bool) in
            guard !state.stopped else { return (true, false) }
            state.jobs.append((job, executor))
            return (false, state.wake())
        }
        if stopped {
            // The thread is gone: a task that still prefers this executor runs elsewhere
            // rather than never, and finds the pool closed.
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
        } else if mustSignal {
            signal()
        }
    }

    /// Stops the thread; pipelines still in flight fail.
    func shutdown() {
        state.withLockedValue { $0.stopped = true }
        signal()
    }

    private func signal() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    private func setWritable(_ writable: Bool, for watch: Watch) throws {
        var flags = EPOLLIN.rawValue | EPOLLET.rawValue
        if writable { flags |= EPOLLOUT.rawValue }
        var event = epoll_event(events: flags, data: epoll_data_t(u64: watch.token))
        guard epoll_ctl(epoll, EPOLL_CTL_MOD, watch.socket, &event) == 0 else {
            throw PostgresError(kind: .connectionFailure, message: "cannot wait on the connection's socket: errno \(errno)")
        }
    }

    private func loop() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            // Jobs and early answers first; block in epoll only once there are none.
            let (jobs, ready, stopped) = state.withLockedValue { state in
                let taken = (state.jobs, state.ready, state.stopped)
                state.jobs.removeAll(keepingCapacity: true)
                state.ready.removeAll(keepingCapacity: true)
                state.sleeping = taken.0.isEmpty && taken.1.isEmpty
                return taken
            }
            if stopped { return finishAfterShutdown(leftover: jobs) }
            for (job, executor) in jobs { job.runSynchronously(on: executor) }
            for watch in ready { service(watch) }
            let idle = jobs.isEmpty && ready.isEmpty
            let count = epoll_wait(epoll, &events, Int32(events.count), idle ? -1 : 0)
            if idle { state.withLockedValue { $0.sleeping = false } }
            if count < 0 {
                if errno == EINTR { continue }
                // The remaining errors (EBADF, EFAULT, EINVAL) mean this object is corrupt:
                // both descriptors live until deinit and `events` is ours.
                fatalError("epoll_wait failed: errno \(errno)")
            }
            for index in 0..<Int(count) {
                let token = events[index].data.u64
                if token == Self.wakeupToken {
                    var value: UInt64 = 0
                    _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
                    continue
                }
                if let watch = state.withLockedValue({ $0.watches[token] }) { service(watch) }
            }
        }
    }

    /// Reads what arrived and hands out every finished pipeline. Edge-triggered, so it
    /// reads until the socket is empty before it waits for the next edge; but once a
    /// pipeline has finished, the watch goes back on the ready list for the rest, so that
    /// the answers already read reach their callers now, not once the server pauses.
    private func service(_ watch: Watch) {
        var finished: [(InFlight, Result<[PostgresRows], any Error>)] = []
        let readAgain = watch.queue.withLockedValue { queue -> Bool in
            guard let connection = queue.jobs.first?.connection else {
                queue.unreadInput = true
                return false
            }
            do {
                while true {
                    let flushed = try connection.flush()
                    if flushed == queue.wantsWritable {
                        try setWritable(!flushed, for: watch)
                        queue.wantsWritable = !flushed
                    }
                    guard connection.consumeInput() else { throw connection.connectionError("could not read from the server") }
                    while let job = queue.jobs.first, !connection.isBusy {
                        if try job.reader.accept(connection.nextResult(), from: connection) {
                            queue.jobs.removeFirst()
                            finished.append((job, Result { try connection.finish(job.reader) }))
                        }
                    }
                    guard !queue.jobs.isEmpty, connection.hasUnreadBytes else { return false }
                    if !finished.isEmpty { return true }
                }
            } catch {
                connection.condemn()
                finished += queue.jobs.map { ($0, .failure(error)) }
                queue.jobs.removeAll()
                return false
            }
        }
        // Outside the lock: a resumed task may send on this connection at once.
        for (job, result) in finished { job.continuation.resume(with: result) }
        if readAgain { state.withLockedValue { $0.ready.append(watch) } }
    }

    private func finishAfterShutdown(leftover jobs: [(UnownedJob, UnownedTaskExecutor)]) {
        let watches = state.withLockedValue { state -> [Watch] in
            defer { state.watches.removeAll() }
            return Array(state.watches.values)
        }
        watches.forEach(abandon)
        for (job, executor) in jobs { job.runSynchronously(on: executor) }
    }

    /// Fails the pipelines still in flight on a watch once the thread that would read them is gone.
    private func abandon(_ watch: Watch) {
        let abandoned = watch.queue.withLockedValue { queue -> [InFlight] in
            defer { queue.jobs.removeAll() }
            return Array(queue.jobs)
        }
        for job in abandoned {
            job.connection.condemn()
            job.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the connection pool is shut down"))
        }
    }
}
