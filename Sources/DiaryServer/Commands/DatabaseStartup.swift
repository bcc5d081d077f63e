import DiaryCore
import Logging
import PostgresClient

/// Start-up's first contact with the database.
enum DatabaseStartup {
    /// 250 ms after the first failure, doubling to 5 s.
    static let backoff = Backoff(base: .milliseconds(250), cap: .seconds(5))

    /// Retries `select 1` with exponential backoff until it succeeds or `limit` passes,
    /// logging each failure, so a server started alongside its database waits for it.
    static func waitUntilReachable(_ pool: PostgresPool, limit: Duration, logger: Logger) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        var attempt = 1
        while true {
            let delay = backoff.delay(attempt: attempt)
            do {
                try await pool.query("select 1")
                if attempt > 1 { logger.info("database reachable", metadata: ["attempts": "\(attempt)"]) }
                return
            } catch let error as PostgresError where error.kind == .connectionFailure {
                guard clock.now.advanced(by: delay) < deadline else {
                    throw ConfigurationError(description: "database \(pool.configuration) unreachable after \(attempt) attempt(s) over \(limit): \(error.message)")
                }
                logger.warning("database unreachable, retrying", metadata: [
                    "target": "\(pool.configuration)", "attempt": "\(attempt)", "retryIn": "\(delay)", "reason": "\(error.message)",
                ])
                try await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }
}
