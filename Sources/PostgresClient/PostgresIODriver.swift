import CLibPQ
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// Waits for the answers of every pooled connection on one thread, with epoll.
///
/// A pipeline is sent from the caller's own thread: in non-blocking mode libpq only
/// copies into its buffer and writes what the socket takes, so nothing blocks. Only
/// the wait for the answer needs a thread, and one serves every connection, as in
/// pgbench. A statement then costs one wake-up of this thread, where a thread blocked
/// on each connection cost a hop there and a hop back (measured: a cheap SELECT ran at
/// a third of pgbench's rate that way, see Benchmarks/results).
final class PostgresIODriver: Sendable {
    /// One pipeline in flight. Unchecked because `reader` is mutable: it is handed over
    /// through `state`'s lock, after which only the driver's thread touches it, and
    /// whoever takes it out of `state` (`take`) is the one that resumes the continuation.
    private final class InFlight: @unchecked Sendable {
        let connection: LibPQConnection
        var reader: PipelineReader
        let continuation: CheckedContinuation<[PostgresRows], any Error>

        init(connection: LibPQConnection, reader: PipelineReader, continuation: CheckedContinuation<[PostgresRows], any Error>) {
            self.connection = connection
            self.reader = reader
            self.continuation = continuation
        }
    }

    private struct State {
        var inFlight: [Int32: InFlight] = [:]
        var stopped = false
    }

    private let epoll: Int32
    private let wakeup: Int32
    private let state = NIOLockedValueBox(State())
    private let sentPipelines = NIOLockedValueBox(0)

    /// Pipelines sent so far: each is one network round trip to the server.
    var roundTrips: Int { sentPipelines.withLockedValue { $0 } }

    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wakeup >= 0, "cannot create the postgres I/O driver's epoll set: errno \(errno)")
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: wakeup))
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event) == 0, "cannot watch the wake-up descriptor: errno \(errno)")
        let thread = Thread { [self] in loop() }
        thread.name = "postgres-io"
        thread.start()
    }

    /// Sends the statements as one pipeline and suspends until the sync answers.
    func run(_ statements: [PostgresQuery], on connection: LibPQConnection) async throws -> [PostgresRows] {
        sentPipelines.withLockedValue { $0 += 1 }
        return try await withCheckedThrowingContinuation { continuation in
            let socket = connection.socket
            var registered = false
            do {
                let reader = try connection.startPipeline(statements)
                // A flush that could not finish, or one that already buffered an answer
                // (libpq reads while a write is blocked), needs servicing without waiting
                // for new input: a writable socket wakes the driver at once.
                let needsService = try !connection.flush() || !connection.isBusy
                let job = InFlight(connection: connection, reader: reader, continuation: continuation)
                let accepted = state.withLockedValue { state -> Bool in
                    guard !state.stopped else { return false }
                    state.inFlight[socket] = job
                    return true
                }
                guard accepted else { throw PostgresError(kind: .poolClosed, message: "the connection pool is shut down") }
                registered = true
                try arm(socket, writable: needsService)
            } catch {
                connection.condemn()
                // Before registration the continuation is ours. After it, shutdown may
                // already have taken and failed the job: resume only if we take it back.
                if !registered || take(socket) != nil {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Removes the socket's job; its caller then owns the continuation.
    private func take(_ socket: Int32) -> InFlight? {
        state.withLockedValue { $0.inFlight.removeValue(forKey: socket) }
    }

    deinit {
        // Here, not when the loop ends: a late `arm` must never reach a closed, reused descriptor.
        close(epoll)
        close(wakeup)
    }

    /// Stops the thread; pipelines still in flight fail.
    func shutdown() {
        state.withLockedValue { $0.stopped = true }
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits once more on `socket`. Oneshot, so a readiness is handled by exactly one
    /// turn of the loop; a connection's first pipeline adds the socket to the set.
    private func arm(_ socket: Int32, writable: Bool) throws {
        var flags = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
        if writable { flags |= EPOLLOUT.rawValue }
        var event = epoll_event(events: flags, data: epoll_data_t(fd: socket))
        if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) == 0 { return }
        if errno == ENOENT, epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 { return }
        throw PostgresError(kind: .connectionFailure, message: "cannot wait on the connection's socket: errno \(errno)")
    }

    private func loop() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = epoll_wait(epoll, &events, Int32(events.count), -1)
            if count < 0 {
                if errno == EINTR { continue }
                // The remaining errors (EBADF, EFAULT, EINVAL) mean this object is corrupt:
                // both descriptors live until deinit and `events` is ours.
                fatalError("epoll_wait failed: errno \(errno)")
            }
            for index in 0..<Int(count) {
                let socket = events[index].data.fd
                if socket == wakeup {
                    if state.withLockedValue({ $0.stopped }) { return finishAfterShutdown() }
                    continue
                }
                guard let job = state.withLockedValue({ $0.inFlight[socket] }) else { continue }
                service(job, socket: socket)
            }
        }
    }

    /// Reads what arrived and hands out every complete result; re-arms until the sync.
    private func service(_ job: InFlight, socket: Int32) {
        let connection = job.connection
        do {
            let flushed = try connection.flush()
            guard connection.consumeInput() else { throw connection.connectionError("could not read from the server") }
            while !connection.isBusy {
                if try job.reader.accept(connection.nextResult(), from: connection) {
                    guard take(socket) === job else { return }
                    job.continuation.resume(with: Result { try connection.finish(job.reader) })
                    return
                }
            }
            try arm(socket, writable: !flushed)
        } catch {
            connection.condemn()
            guard take(socket) === job else { return }
            job.continuation.resume(throwing: error)
        }
    }

    private func finishAfterShutdown() {
        let abandoned = state.withLockedValue { state -> [InFlight] in
            defer { state.inFlight.removeAll() }
            return Array(state.inFlight.values)
        }
        for job in abandoned {
            job.connection.condemn()
            job.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the connection pool is shut down"))
        }
    }
}
