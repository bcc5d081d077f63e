public import NIOCore

/// What a caller chooses and reads of a pool, apart from how the pool works (PostgresPool.swift).
extension PostgresPool {
    public struct Options: Sendable {
        public var size: Int
        public var acquireTimeout: Duration
        /// Threads that wait on the sockets; together they are a task executor (`PostgresPool.executor`).
        public var ioThreads: Int
        /// Connections that carry `.sharedConnection` pipelines before those start to queue
        /// on them; by default two per I/O thread, enough to keep the cores busy.
        public var sharedConnections: Int
        /// `.sharedConnection` pipelines in flight on one connection at most.
        public var pipelinesPerConnection: Int

        public init(
            size: Int = 8, acquireTimeout: Duration = .seconds(2), ioThreads: Int = min(System.coreCount, 4),
            sharedConnections: Int? = nil, pipelinesPerConnection: Int = 16
        ) {
            self.size = max(1, size)
            self.acquireTimeout = acquireTimeout
            self.ioThreads = max(1, min(ioThreads, self.size))
            self.sharedConnections = max(1, sharedConnections ?? 2 * self.ioThreads)
            self.pipelinesPerConnection = max(1, pipelinesPerConnection)
        }
    }

    /// Where a `query` or `transaction` pipeline runs.
    public enum Placement: Sendable {
        /// On a connection of its own, as `withConnection` leases one. For writes: a commit
        /// waits for its WAL flush, and commits group best across many backends.
        case ownConnection
        /// Queued behind other shared pipelines on one of a few busy connections
        /// (`Options.sharedConnections`). For short reads, whose cost is the backend's CPU:
        /// a backend that finds its next statement waiting spends less than one that
        /// sleeps and is woken for it. A pipeline behind a slow one waits for it.
        case sharedConnection
    }

    public struct Statistics: Sendable, Equatable {
        public var inUse: Int
        public var idle: Int
        public var waiting: Int
        /// Pipelines in flight on the shared connections (`Placement.sharedConnection`).
        public var sharedPipelines: Int = 0
        /// Round trips to the server since the pool started (the benchmark divides it by requests).
        public var roundTrips: Int = 0
    }
}
