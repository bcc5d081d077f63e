package import Foundation
package import Logging
import Metrics
package import PostgresClient

/// One per server: keeps the promise made to the former members of a closed diary.
///
/// A diary whose last member leaves is closed (`hand_on_or_close`, announced on
/// `closed_diaries`). Each round, in order: closed diaries get their deletion date, the close
/// plus the window, and every former member a push saying so (`schedule_closed_diaries`);
/// closed diaries past that date are deleted (`purge_closed_diaries`, whose photos the sweep
/// then collects); departures from open diaries past the window are forgotten
/// (`prune_former_members`). Every step locks each diary's row and checks again, so any
/// number of servers may run rounds, and a restore racing a purge either wins or finds nothing.
package final class ClosedDiaryWorker: Sendable {
    package struct Options: Sendable {
        /// `CLOSED_DIARY_RETENTION_DAYS`.
        package var window: Duration = .seconds(30 * 86_400)
        /// For what a NOTIFY missed, and for deletion dates that arrive.
        package var pollInterval: Duration = .seconds(600)
        package var batchSize = 50
        package var gaugeInterval: Duration = .seconds(60)
        package init(window: Duration = .seconds(30 * 86_400)) {
            self.window = window
        }
    }

    /// What one round did.
    package struct Round: Sendable, Equatable {
        package var scheduled: [UUID] = []
        package var purged: [UUID] = []
        package var pruned = 0
    }

    package static let applicationName = "diary-server closed diaries"
    /// The worker's own connections; run it as a service beside the worker.
    package let pool: PostgresPool
    private let listenConfiguration: PostgresConfiguration
    private let options: Options
    /// Called after a round deleted diaries: their photos' files can go now.
    private let purged: @Sendable () -> Void
    private let logger: Logger
    private let wakeups = Wakeups()

    package init(pool: PostgresPool, listenConfiguration: PostgresConfiguration, options: Options, purged: @escaping @Sendable () -> Void, logger: Logger) {
        self.pool = pool
        self.listenConfiguration = listenConfiguration
        self.options = options
        self.purged = purged
        self.logger = logger
    }

    /// Runs until cancelled.
    package func run() async {
        await runWorkerLoops([
            { for await _ in self.wakeups.rounds { await loggingFailure(of: "closed diaries: a round", logger: self.logger) { _ = try await self.round() } } },
            { await repeating(every: self.options.gaugeInterval, startingAtOnce: true) { await self.recordGauges() } },
        ] + wakeups.wakers(channel: "closed_diaries", listen: listenConfiguration, polling: options.pollInterval, startingAtOnce: true, logger: logger),
        finishing: wakeups)
    }

    /// Schedules, purges and prunes everything due now, a batch per transaction.
    @discardableResult
    package func round() async throws -> Round {
        var round = Round()
        try await drainBatches(batchSize: options.batchSize) {
            let rows = try await pool.query("select diary_id, purge_at, notified from schedule_closed_diaries(\(options.window), \(options.batchSize)::integer)")
            for row in rows {
                let diary: UUID = try row.decode("diary_id")
                round.scheduled.append(diary)
                let deletesAt: Date = try row.decode("purge_at")
                let notified: Int = try row.decode("notified")
                logger.notice("closed diary: its former members are told when it will be deleted", metadata: [
                    "diary_id": "\(diary)", "deletes_at": "\(deletesAt.formatted(.iso8601))", "pushes": "\(notified)",
                ])
            }
            return rows.count
        }
        try await drainBatches(batchSize: options.batchSize) {
            let rows = try await pool.query("select purge_closed_diaries(\(options.batchSize)::integer) as diary_id")
            for row in rows {
                let diary: UUID = try row.decode("diary_id")
                round.purged.append(diary)
                logger.notice("closed diary deleted: its window passed with nobody restoring it", metadata: ["diary_id": "\(diary)"])
            }
            return rows.count
        }
        try await drainBatches(batchSize: options.batchSize) {
            let rows = try await pool.query("select prune_former_members(\(options.window), \(options.batchSize)::integer) as pruned")
            let pruned: Int = try rows.first?.decode("pruned") ?? 0
            round.pruned += pruned
            return pruned
        }
        if !round.scheduled.isEmpty { Counter(label: "closed_diaries_scheduled_total").increment(by: round.scheduled.count) }
        if !round.purged.isEmpty {
            Counter(label: "closed_diaries_deleted_total").increment(by: round.purged.count)
            purged()
        }
        if round.pruned > 0 { logger.info("departures past their window forgotten", metadata: ["departures": "\(round.pruned)"]) }
        return round
    }

    /// Closed diaries kept, and those whose date has passed but are not deleted yet: a
    /// backlog that grows means rounds fail.
    private func recordGauges() async {
        do {
            let rows = try await pool.query("select closed, overdue from closed_diaries_backlog()")
            guard let row = rows.first else { return }
            Gauge(label: "closed_diaries").record(try row.decode("closed", as: Int.self))
            Gauge(label: "closed_diaries_overdue").record(try row.decode("overdue", as: Int.self))
        } catch is CancellationError {
            return
        } catch {
            logger.warning("closed diaries: the gauges cannot be read", metadata: ["error": "\(error)"])
        }
    }
}
