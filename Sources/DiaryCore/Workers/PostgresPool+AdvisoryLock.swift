import PostgresClient

extension PostgresPool {
    /// Runs `body` while this session holds the advisory lock `key`, on a connection of its
    /// own held throughout, so that of many servers one does the work; nil, without running
    /// `body`, while another session holds it. `body`'s queries need a second connection.
    func whileHoldingAdvisoryLock<Result: Sendable>(_ key: Int64, _ body: () async throws -> Result) async throws -> Result? {
        try await withConnection { lock in
            guard try await lock.query("select pg_try_advisory_lock(\(key)) as taken")[0].decode("taken", as: Bool.self) else {
                return nil
            }
            do {
                let result = try await body()
                try await lock.query("select pg_advisory_unlock(\(key))")
                return result
            } catch {
                // A connection that fails to unlock is broken, and its session's lock went with it.
                _ = try? await lock.query("select pg_advisory_unlock(\(key))")
                throw error
            }
        }
    }
}
