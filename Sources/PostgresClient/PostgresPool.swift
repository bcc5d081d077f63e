import Logging
import NIOConcurrencyHelpers
import NIOPosix
import ServiceLifecycle

/// A bounded pool of libpq connections, run as a ServiceLifecycle service.
///
/// Connections open lazily up to `size`. A caller that finds none free waits up to
/// `acquireTimeout`, then gets `PostgresError.Kind.poolExhausted`. One I/O thread waits
/// on every connection's answers; a few more threads open connections, which blocks.
public final class PostgresPool: Service, Sendable {
    public struct Options: Sendable {
        public var size: Int
        public var acquireTimeout: Duration

        public init(size: Int = 8, acquireTimeout: Duration = .seconds(2)) {
            self.size = max(1, size)
            self.acquireTimeout = acquireTimeout
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var inUse: Int
        public var idle: Int
        public var waiting: Int
        /// Round trips to the server since the pool started (the benchmark divides it by requests).
        public var roundTrips: Int = 0
    }

    private enum Grant {
        case reuse(LibPQConnection)
        case open
    }

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Grant, any Error>
        var timeout: Task<Void, Never>?
    }

    private struct State {
        var idle: [LibPQConnection] = []
        /// Connections that exist or are being opened, idle ones included.
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var closed = false
    }

    public let configuration: PostgresConfiguration
    public let options: Options
    private let threads: NIOThreadPool
    private let driver = PostgresIODriver()
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    public init(configuration: PostgresConfiguration, options: Options = Options(), logger: Logger) {
        self.configuration = configuration
        self.options = options
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: min(options.size, 4))
        threads.start()
    }

    public var statistics: Statistics {
        var statistics = state.withLockedValue { state in
            Statistics(inUse: state.open - state.idle.count, idle: state.idle.count, waiting: state.waiters.count)
        }
        statistics.roundTrips = driver.roundTrips
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
            defer { state.idle.removeAll(); state.waiters.removeAll() }
            state.open -= state.idle.count
            return (state.idle, state.waiters)
        }
        guard let (idle, waiters) = closing else { return }
        for waiter in waiters {
            waiter.timeout?.cancel()
            waiter.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the connection pool is shut down"))
        }
        try await threads.runIfActive { withExtendedLifetime(idle) {} }
        try await threads.shutdownGracefully()
        driver.shutdown()
        logger.debug("postgres pool closed", metadata: ["connections": "\(idle.count)"])
    }

    /// Leases a connection for the duration of `body`.
    public func withConnection<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        let connection = try await acquire()
        do {
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

    /// One statement on any free connection.
    @discardableResult
    public func query(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { try await $0.query(statement) }
    }

    /// Statements in one transaction and one round trip on any free connection.
    public func transaction(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        try await withConnection { try await $0.transaction(statements) }
    }

    private func acquire() async throws -> LibPQConnection {
        let grant = try await grant()
        let configuration = self.configuration
        do {
            switch grant {
            case .reuse(let connection):
                if connection.needsReconnect {
                    try await threads.runIfActive { try connection.reconnect() }
                }
                return connection
            case .open:
                return try await threads.runIfActive { try LibPQConnection.connect(configuration) }
            }
        } catch {
            // The slot is free again: let a waiter try its luck with a fresh connection.
            giveUpSlot()
            logger.warning("postgres connection failed", metadata: ["error": "\(error)", "target": "\(configuration)"])
            throw error
        }
    }

    private func grant() async throws -> Grant {
        enum Immediate { case grant(Grant), wait(Int), closed }
        let immediate = state.withLockedValue { state -> Immediate in
            if state.closed { return .closed }
            if let connection = state.idle.popLast() { return .grant(.reuse(connection)) }
            if state.open < options.size {
                state.open += 1
                return .grant(.open)
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
                    let timeout = Task { [options] in
                        try? await Task.sleep(for: options.acquireTimeout)
                        guard !Task.isCancelled else { return }
                        self.failWaiter(id, with: PostgresError(kind: .poolExhausted, message: "no database connection became free within \(options.acquireTimeout)"))
                    }
                    state.withLockedValue { state in
                        state.waiters.append(Waiter(id: id, continuation: continuation, timeout: timeout))
                    }
                    // A connection may have come back between the first look and enqueueing.
                    serveWaiters()
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
        waiter.timeout?.cancel()
        waiter.continuation.resume(throwing: error)
    }

    /// Hands idle connections or free slots to waiters, oldest first.
    private func serveWaiters() {
        let served = state.withLockedValue { state -> [(Waiter, Grant)] in
            var served: [(Waiter, Grant)] = []
            while !state.waiters.isEmpty {
                if let connection = state.idle.popLast() {
                    served.append((state.waiters.removeFirst(), .reuse(connection)))
                } else if state.open < options.size {
                    state.open += 1
                    served.append((state.waiters.removeFirst(), .open))
                } else {
                    break
                }
            }
            return served
        }
        for (waiter, grant) in served {
            waiter.timeout?.cancel()
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
            state.idle.append(connection)
            return true
        }
        if !keep {
            threads.submit { _ in withExtendedLifetime(connection) {} }
        }
        serveWaiters()
    }

    private func giveUpSlot() {
        state.withLockedValue { $0.open -= 1 }
        serveWaiters()
    }
}
