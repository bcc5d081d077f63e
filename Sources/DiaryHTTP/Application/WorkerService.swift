package import PostgresClient
package import ServiceLifecycle

/// A background worker beside the HTTP server (the feed, push delivery and reminders, the
/// photo sweeper, Apple's revocations, scheduled backups) with the pool it owns. The loop
/// ends when cancelled, which graceful shutdown does; then the pool closes, after the last
/// query its worker sent.
package struct WorkerService: Service {
    let pool: PostgresPool
    let loop: @Sendable () async throws -> Void

    package init(pool: PostgresPool, _ loop: @escaping @Sendable () async throws -> Void) {
        self.pool = pool
        self.loop = loop
    }

    package func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await loop() }
        } catch {
            try? await pool.close()
            throw error
        }
        try? await pool.close()
    }
}
