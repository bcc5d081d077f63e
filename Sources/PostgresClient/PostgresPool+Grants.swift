import NIOConcurrencyHelpers

/// How the pool hands out connections, kept apart from the waiting and the bookkeeping in
/// PostgresPool.swift. Always called under the pool's lock.
extension PostgresPool.State {
    /// A lease; or for a shared pipeline, a connection of its own while fewer than
    /// `sharedConnections` carry shared pipelines, then a place on the least busy of those
    /// (the caller's I/O thread first), and once all are full, any free connection.
    mutating func grant(sharing: Bool, preferring preferred: Int?, options: PostgresPool.Options) -> PostgresPool.Grant? {
        guard sharing else { return grantWithoutWaiting(preferring: preferred, size: options.size) }
        if shared.reduce(0, { $0 + $1.count }) < options.sharedConnections,
           let grant = grantWithoutWaiting(preferring: preferred, size: options.size) {
            return grant
        }
        func leastBusy(_ connections: [LibPQConnection]) -> LibPQConnection? {
            connections.lazy.filter { $0.sharers < options.pipelinesPerConnection && !$0.isCondemned }.min { $0.sharers < $1.sharers }
        }
        if let connection = preferred.flatMap({ leastBusy(shared[$0]) }) ?? leastBusy(shared.joined().map { $0 }) {
            connection.sharers += 1
            return .share(connection)
        }
        return grantWithoutWaiting(preferring: preferred, size: options.size)
    }

    /// An idle connection or a free slot; nil when the pool is full. A caller on an I/O
    /// thread gets that thread's own connection, or a new one for it, before another
    /// thread's; any other caller reuses before it opens, so the pool grows only under load.
    mutating func grantWithoutWaiting(preferring preferred: Int?, size: Int) -> PostgresPool.Grant? {
        if let preferred {
            if let connection = idle[preferred].popLast() {
                idleCount -= 1
                return .reuse(connection)
            }
            if open < size {
                open += 1
                return .open(driver: preferred)
            }
        }
        if idleCount > 0, let index = idle.indices.max(by: { idle[$0].count < idle[$1].count }), let connection = idle[index].popLast() {
            idleCount -= 1
            return .reuse(connection)
        }
        if open < size {
            open += 1
            defer { nextDriver = (nextDriver + 1) % idle.count }
            return .open(driver: nextDriver)
        }
        return nil
    }
}
