package import Foundation
package import Logging
import Metrics
package import PostgresClient

/// One per server: removes the files of deleted photos, deletes uploads never attached,
/// and removes files that no row names (a crash between writing a file and its row).
///
/// Any number of servers may sweep one store: hashes are claimed with SKIP LOCKED, and a
/// file is removed inside the transaction that holds its hash's lock and has found no row
/// naming it (`claim_photo_garbage`, `unnamed_photo_files`), so an upload of the same bytes
/// that commits meanwhile keeps its file.
package final class PhotoSweeper: Sendable {
    package struct Options: Sendable {
        /// How often the whole sweep runs; deletions are collected at once besides (`collectSoon`).
        package var interval: Duration = .seconds(600)
        /// The first sweep after start: soon, for a server that was down, but not at once,
        /// so that a fleet restarting together does not sweep together.
        package var firstSweepAfter: Duration = .seconds(60)
        package var unattachedLifetime: Duration = PhotoRepository.unattachedLifetime
        /// A file younger than this may belong to an upload whose row is not committed yet.
        package var orphanGrace: Duration = .seconds(3600)
        /// How long a deleted photo's file stays (PHOTO_DELETED_KEEP_HOURS): a database
        /// restored to a point within it still finds the files its rows name.
        package var deletedFilesKept: Duration = .zero
        package var batchSize = 100
        package init() {}
    }

    package static let applicationName = "diary-server photos"
    /// The sweeper's own connections; run it as a service beside the sweeper.
    package let pool: PostgresPool
    let store: any PhotoStore
    let options: Options
    let logger: Logger
    private let wakeups = Wakeups()

    package init(pool: PostgresPool, store: any PhotoStore, options: Options = Options(), logger: Logger) {
        self.pool = pool
        self.store = store
        self.options = options
        self.logger = logger
    }

    /// After a commit that deleted photos: their files go now, not at the next sweep.
    package func collectSoon() {
        wakeups.wake()
    }

    /// Runs until cancelled.
    package func run() async {
        await runWorkerLoops([
            {
                do { try await Task.sleep(for: self.options.firstSweepAfter) } catch { return }
                await repeating(every: self.options.interval, startingAtOnce: true) { await loggingFailure(of: "photos: sweep", logger: self.logger) { try await self.sweep() } }
            },
            { for await _ in self.wakeups.rounds { await loggingFailure(of: "photos: collection", logger: self.logger) { _ = try await self.collect() } } },
        ], finishing: wakeups)
    }

    /// Removes the files of queued hashes that no row names; returns how many.
    @discardableResult
    package func collect() async throws -> Int {
        var removed = 0
        while true {
            let (claimed, gone) = try await pool.withTransaction { connection in
                let rows = try await connection.query("select content_hash, unnamed from claim_photo_garbage(\(options.batchSize)::integer, \(options.deletedFilesKept))")
                var gone = 0
                for row in rows where try row.decode("unnamed", as: Bool.self) {
                    try await store.remove(try row.decode("content_hash", as: String.self))
                    gone += 1
                }
                return (rows.count, gone)
            }
            removed += gone
            if claimed < options.batchSize { break }
        }
        if removed > 0 {
            Counter(label: "photo_files_removed_total", dimensions: [("reason", "deleted")]).increment(by: removed)
            logger.info("photos: removed files of deleted photos", metadata: ["files": "\(removed)"])
        }
        let backlog = try await pool.query("select photo_garbage_backlog() as backlog")
        Gauge(label: "photo_garbage_backlog", dimensions: []).record(try backlog.first?.decode("backlog", as: Int.self) ?? 0)
        return removed
    }

    /// Expires unattached uploads, collects, then removes files no row names.
    package func sweep(at now: Date = Date()) async throws {
        let expired = try await pool.query("select expire_photo_uploads(\(options.unattachedLifetime)) as expired")
        let expiredCount = try expired.first?.decode("expired", as: Int.self) ?? 0
        if expiredCount > 0 { logger.info("photos: deleted uploads never attached", metadata: ["uploads": "\(expiredCount)"]) }
        try await collect()
        var orphans = 0
        try await store.forEachObject(writtenBefore: now.addingTimeInterval(-options.orphanGrace.totalSeconds)) { page in
            orphans += try await pool.withTransaction { connection in
                let hashes = try await connection.query("select unnamed_photo_files(\(page)) as hash").map { try $0.decode("hash", as: String.self) }
                for hash in hashes { try await store.remove(hash) }
                return hashes.count
            }
        }
        if orphans > 0 {
            Counter(label: "photo_files_removed_total", dimensions: [("reason", "orphaned")]).increment(by: orphans)
            logger.notice("photos: removed files that no photo names", metadata: ["files": "\(orphans)"])
        }
    }
}
