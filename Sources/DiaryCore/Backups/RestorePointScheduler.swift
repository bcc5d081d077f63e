package import Foundation
package import Logging
package import PostgresClient

/// Automatic backups inside `serve` on a Citus cluster (`RESTORE_POINT_DATABASE_URL`), whose
/// nodes pgBackRest backs up and archives: when the newest recorded restore point is older
/// than the interval (`BackupSchedule`), one more, on every node at once (`RestorePoint.take`),
/// which the Data Safety Center then reports. One server at a time, by an advisory lock, as
/// `BackupScheduler` does; the same metrics.
package final class RestorePointScheduler: Sendable {
    package enum Outcome: Sendable, Equatable {
        /// The newest restore point is younger than the interval.
        case notDue
        /// Another server holds the lock, and is taking one.
        case locked
        case taken(name: String)
        case failed(String)
    }

    /// pg_try_advisory_lock's key: "diaryrpt".
    package static let advisoryLockKey: Int64 = 0x6469_6172_7972_7074

    let pool: PostgresPool
    let schedule: BackupSchedule
    let logger: Logger

    /// `pool` logs in as a superuser (Citus's restore points are superusers' only), with two
    /// connections: one holds the lock while the other works.
    package init(pool: PostgresPool, schedule: BackupSchedule, logger: Logger) {
        precondition(pool.options.size >= 2, "the restore point scheduler's pool needs two connections: the lock's and the work's")
        self.pool = pool
        self.schedule = schedule
        self.logger = logger
    }

    /// Runs until cancelled.
    package func run() async {
        await schedule.run { _ = await self.tick() }
    }

    /// One look: takes a restore point if one is due and no other server is at it.
    @discardableResult
    package func tick(at now: Date = Date()) async -> Outcome {
        let started = ContinuousClock.now
        do {
            return try await pool.whileHoldingAdvisoryLock(Self.advisoryLockKey) {
                let newest = try await pool.query("""
                    select max(finished_at) as newest from backup_runs where starts_with(location, \(RestorePoint.Taken.locationPrefix))
                    """).first?.decode("newest", as: Date?.self)
                guard schedule.isDue(newest: newest, at: now) else { return .notDue }
                let taken = try await RestorePoint.take(named: RestorePoint.defaultName(at: now), pool: pool, logger: logger)
                BackupMetrics.recordMade(after: ContinuousClock.now - started, healthy: true)
                return .taken(name: taken.name)
            } ?? .locked
        } catch where error is CancellationError || Task.isCancelled {
            logger.info("restore point interrupted by shutdown")
            return .failed("cancelled")
        } catch {
            BackupMetrics.recordFailure()
            logger.error("restore point failed; the next check tries again", metadata: ["error": "\(error)"])
            return .failed("\(error)")
        }
    }
}
