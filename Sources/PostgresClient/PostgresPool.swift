public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
public import ServiceLifecycle

/// A bounded pool of libpq connections, run as a ServiceLifecycle service.
///
/// Connections open lazily up to `size`. A caller that finds none free waits up to
/// `acquireTimeout`, then gets `PostgresError.Kind.poolExhausted`. A few I/O threads
/// (`ioThreads`, one per core as pgbench's `-j`) each wait on their share of the
/// connections' answers; a few more threads open connections, which blocks.
///
/// `query` and `transaction` may ask for a `.sharedConnection` (see `Placement`): their
/// pipeline then queues behind others on one of a few busy connections. Each pipeline
/// ends with its own sync, so the server runs it as one implicit transaction that an
/// error rolls back without touching its neighbours. `withConnection` and
/// `withTransaction` always lease a connection of their own.
public final class PostgresPool: Service, Sendable {
    enum Grant {
        case reuse(LibPQConnection)
        /// Open a connection served by this I/O thread.
        case open(driver: Int)
        /// Queue a pipeline behind those already in flight on this connection.
        case share(LibPQConnection)
    }

    struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Grant, any Error>
        var deadline: ContinuousClock.Instant
        /// Waits for a pipeline's place, which may be on a busy connection, not for a lease.
        var sharing: Bool
    }

    struct State {
        /// Idle connections by the I/O thread that serves them.
        var idle: [[LibPQConnection]]
        /// Connections carrying shared pipelines, by I/O thread; `sharers` counts each one's.
        var shared: [[LibPQConnection]]
        var idleCount = 0
        /// Where the next connection opened off the I/O threads goes.
        var nextDriver = 0
        /// Connections that exist or are being opened, idle ones included.
        var open = 0
        /// Oldest first. Everyone waits equally long, so the first also has the earliest deadline.
        var waiters = CircularBuffer<Waiter>()
        var nextWaiterID = 0
        /// Whether a task is timing the waiters out (one task for all of them, see `expireWaiters`).
        var expiring = false
        var closed = false
    }

    public let configuration: PostgresConfiguration
    public let options: Options
    private let threads: NIOThreadPool
    private let drivers: [PostgresIODriver]
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    public init(configuration: PostgresConfiguration, options: Options = Options(), logger: Logger) {
        self.configuration = configuration
        self.options = options
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: min(options.size, 4))
        let drivers = (0..<options.ioThreads).map { PostgresIODriver(index: $0) }
        self.drivers = drivers
        self.executor = PostgresIOExecutor(drivers: drivers)
        self.state = NIOLockedValueBox(State(idle: Array(repeating: [], count: options.ioThreads), shared: Array(repeating: [], count: options.ioThreads)))
        threads.start()
    }

    /// The threads that wait on the connections' sockets, as a task executor. Tasks that
    /// mostly talk to the database spend less per statement there (no hand-over between
    /// threads when an answer arrives); they must not block it with long computations.
    public let executor: any TaskExecutor

    public var statistics: Statistics {
        var statistics = state.withLockedValue { state in
            Statistics(
                inUse: state.open - state.idleCount, idle: state.idleCount, waiting: state.waiters.count,
                sharedPipelines: state.shared.joined().reduce(0) { $0 + $1.sharers }
            )
        }
        statistics.roundTrips = drivers.reduce(0) { $0 + $1.roundTrips }
        return statistics
    }

    /// Waits for a graceful shutdown, then closes every connection.
    public func run() async throws {
        try? await gracefulShutdown()
        try await close()
    }

    /// Refuses new work, closes idle connections now and leased ones as they come back.
    /// Closing twice is harmless: the service may close on shutdown after its owner already did.
    public func close() async throws {
        let closing = state.withLockedValue { state -> ([LibPQConnection], [Waiter])? in
            guard !state.closed else { return nil }
            state.closed = true
            let idle = state.idle.flatMap { $0 }
            defer {
                state.idle = state.idle.map { _ in [] }
                state.idleCount = 0
                state.waiters.removeAll()
            }
            state.open -= idle.count
            return (idle, Array(state.waiters))
        }
        guard let (idle, waiters) = closing else { return }
        for waiter in waiters {
            waiter.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the connection pool is shut down"))
        }
        for connection in idle { drivers[connection.driverIndex].unwatch(connection) }
        try await threads.runIfActive { withExtendedLifetime(idle) {} }
        try await threads.shutdownGracefully()
        drivers.forEach { $0.shutdown() }
        logger.debug("postgres pool closed", metadata: ["connections": "\(idle.count)"])
    }

    /// Leases a connection for the duration of `body`.
    public func withConnection<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        let connection = try await acquire()
        do {
            let driver = drivers[connection.driverIndex]
            let result = try await body(PostgresConnection(connection: connection, driver: driver, threads: threads, logger: logger))
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    /// Leases a connection and runs `body` inside `BEGIN … COMMIT`, rolling back when it throws.
    public func withTransaction<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        try await withConnection { connection in
            try await connection.withTransaction(body)
        }
    }

    /// One statement, on a free connection or, if `placement` allows, behind others on a busy one.
    @discardableResult
    public func query(_ statement: PostgresQuery, placement: Placement = .ownConnection) async throws -> PostgresRows {
        guard placement == .sharedConnection, !statement.controlsTransaction else {
            return try await withConnection { try await $0.query(statement) }
        }
        return try await sharedPipeline([statement])[0]
    }

    /// Statements in one transaction and one round trip, on a free connection or, if
    /// `placement` allows, behind others on a busy one; `afterCommit` as
    /// `PostgresConnection.transaction` runs it, on a connection of its own.
    /// A mode other than READ COMMITTED takes a connection of its own: a shared pipeline has
    /// no BEGIN to carry it.
    public func transaction(
        _ statements: [PostgresQuery], placement: Placement = .ownConnection, mode: PostgresConnection.TransactionMode = .readCommitted,
        afterCommit: [PostgresQuery] = []
    ) async throws -> [PostgresRows] {
        guard placement == .sharedConnection, mode == .readCommitted, afterCommit.isEmpty, !statements.contains(where: \.controlsTransaction) else {
            return try await withConnection { try await $0.transaction(statements, mode: mode, afterCommit: afterCommit) }
        }
        // No BEGIN and COMMIT: the statements before a sync are one implicit transaction,
        // which the server rolls back itself on an error, so nothing is left for the
        // pipelines queued behind this one to trip over.
        return try await sharedPipeline(statements)
    }

    /// Sends the statements as one pipeline, alone on a connection or behind others.
    private func sharedPipeline(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        let connection = try await acquire(sharing: true)
        do {
            let rows = try await drivers[connection.driverIndex].run(statements, on: connection)
            stopSharing(connection)
            return rows
        } catch {
            stopSharing(connection)
            throw error
        }
    }

    private func acquire(sharing: Bool = false) async throws -> LibPQConnection {
        let grant = try await grant(sharing: sharing)
        let configuration = self.configuration
        do {
            switch grant {
            case .reuse(let connection):
                let driver = drivers[connection.driverIndex]
                if connection.needsReconnect(inputArrived: driver.takeUnreadInput(connection)) {
                    // The new socket may reuse the old one's number; it joins the epoll set afresh.
                    driver.unwatch(connection)
                    try await threads.runIfActive { try connection.reconnect() }
                }
                if sharing { startSharing(connection) }
                return connection
            case .open(let driverIndex):
                let connection = try await threads.runIfActive { try LibPQConnection.connect(configuration) }
                connection.driverIndex = driverIndex
                if sharing { startSharing(connection) }
                return connection
            case .share(let connection):
                return connection
            }
        } catch {
            if case .reuse(let connection) = grant { drivers[connection.driverIndex].unwatch(connection) }
            // The slot is free again: let a waiter try its luck with a fresh connection.
            giveUpSlot()
            var metadata: Logger.Metadata = ["error": "\(error)", "target": "\(configuration)"]
            // A failed connect's message is libpq's or the server's startup answer ("too many clients",
            // "Connection refused", "Too many open files"): it quotes no statement, and it is the cause.
            if let failure = error as? PostgresError, failure.kind == .connectionFailure { metadata["reason"] = "\(failure.message)" }
            logger.warning("postgres connection failed", metadata: metadata)
            throw error
        }
    }

    private func grant(sharing: Bool) async throws -> Grant {
        enum Immediate { case grant(Grant), wait(Int), closed }
        let preferred = currentDriverIndex
        let immediate = state.withLockedValue { state -> Immediate in
            if state.closed { return .closed }
            // A pipeline joins a busy connection only when nobody waits, so that a caller
            // waiting for a lease of its own sees the shared connections drain.
            if sharing ? state.waiters.isEmpty : true,
               let grant = state.grant(sharing: sharing, preferring: preferred, options: options) {
                return .grant(grant)
            }
            state.nextWaiterID += 1
            return .wait(state.nextWaiterID)
        }
        switch immediate {
        case .closed:
            throw PostgresError(kind: .poolClosed, message: "the connection pool is shut down")
        case .grant(let grant):
            return grant
        case .wait(let id):
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    enum Enqueued { case waiting(startExpiring: Bool), closed }
                    let enqueued = state.withLockedValue { state -> Enqueued in
                        if state.closed { return .closed }
                        state.waiters.append(Waiter(id: id, continuation: continuation, deadline: .now + options.acquireTimeout, sharing: sharing))
                        defer { state.expiring = true }
                        return .waiting(startExpiring: !state.expiring)
                    }
                    switch enqueued {
                    case .closed:
                        continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the connection pool is shut down"))
                    case .waiting(let startExpiring):
                        if startExpiring { Task { await self.expireWaiters() } }
                        // A connection may have come back between the first look and enqueueing.
                        serveWaiters()
                    }
                }
            } onCancel: {
                self.failWaiter(id, with: CancellationError())
            }
        }
    }

    private func failWaiter(_ id: Int, with error: any Error) {
        let waiter = state.withLockedValue { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let waiter else { return }
        waiter.continuation.resume(throwing: error)
    }

    /// Fails waiters whose deadline has passed, for as long as anyone waits. One task times
    /// them all: a timer task per waiter would cost a task, a timer and two thread wake-ups
    /// for every request that waits, which under load is most requests.
    private func expireWaiters() async {
        while true {
            let now = ContinuousClock.now
            let (expired, next) = state.withLockedValue { state -> ([Waiter], ContinuousClock.Instant?) in
                var expired: [Waiter] = []
                while let first = state.waiters.first, first.deadline <= now {
                    expired.append(state.waiters.removeFirst())
                }
                if state.waiters.isEmpty { state.expiring = false }
                return (expired, state.waiters.first?.deadline)
            }
            for waiter in expired {
                waiter.continuation.resume(throwing: PostgresError(kind: .poolExhausted, message: "no database connection became free within \(options.acquireTimeout)"))
            }
            guard let next else { return }
            try? await Task.sleep(until: next, clock: .continuous)
        }
    }

    /// Hands idle connections or free slots to waiters, oldest first.
    private func serveWaiters() {
        let served = state.withLockedValue { state -> [(Waiter, Grant)] in
            var served: [(Waiter, Grant)] = []
            while let first = state.waiters.first, let grant = state.grant(sharing: first.sharing, preferring: nil, options: options) {
                served.append((state.waiters.removeFirst(), grant))
            }
            return served
        }
        for (waiter, grant) in served {
            waiter.continuation.resume(returning: grant)
        }
    }

    private func release(_ connection: LibPQConnection) {
        // A connection left inside a transaction (a cancelled task, a failed rollback) is not safe to lend again.
        let reusable = connection.isBroken || connection.isIdle
        let keep = state.withLockedValue { state -> Bool in
            guard reusable, !state.closed else {
                state.open -= 1
                return false
            }
            state.idle[connection.driverIndex].append(connection)
            state.idleCount += 1
            return true
        }
        if !keep {
            drivers[connection.driverIndex].unwatch(connection)
            threads.submit { _ in withExtendedLifetime(connection) {} }
        }
        serveWaiters()
    }

    /// Makes a connection that has just become ready open to other shared pipelines.
    private func startSharing(_ connection: LibPQConnection) {
        state.withLockedValue { state in
            connection.sharers = 1
            state.shared[connection.driverIndex].append(connection)
        }
        // Pipelines that found no connection to share may now queue on this one.
        serveWaiters()
    }

    /// One shared pipeline is done; the last one out returns the connection to the idle list.
    private func stopSharing(_ connection: LibPQConnection) {
        let dropped = state.withLockedValue { state -> Bool in
            connection.sharers -= 1
            guard connection.sharers == 0 else { return false }
            state.shared[connection.driverIndex].removeAll { $0 === connection }
            guard !state.closed, connection.isBroken || connection.isIdle else {
                state.open -= 1
                return true
            }
            state.idle[connection.driverIndex].append(connection)
            state.idleCount += 1
            return false
        }
        if dropped {
            drivers[connection.driverIndex].unwatch(connection)
            threads.submit { _ in withExtendedLifetime(connection) {} }
        }
        serveWaiters()
    }

    /// The I/O thread the caller runs on, if it is one: its own connections need no hand-over.
    private var currentDriverIndex: Int? {
        guard let current = PostgresIODriver.current else { return nil }
        return drivers.firstIndex { $0 === current }
    }

    private func giveUpSlot() {
        state.withLockedValue { $0.open -= 1 }
        serveWaiters()
    }
}
