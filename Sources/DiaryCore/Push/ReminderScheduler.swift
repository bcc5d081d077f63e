package import Foundation
package import Logging
import Metrics
package import PostgresClient

/// The daily reminder's clock: every `interval`, `run_reminders` schedules users whose
/// settings changed and queues the reminders that are due (FOR UPDATE SKIP LOCKED, so any
/// number of servers may tick). The SQL decides what is due from the time it is given, so
/// the tests drive it with a clock of their own.
package final class ReminderScheduler: Sendable {
    package struct Options: Sendable {
        /// Reminders go out within this (plus delivery) of their minute.
        package var interval: Duration = .seconds(10)
        package var batchSize = 1000
        package init() {}
    }

    package enum Outcome: String, Sendable {
        /// Queued for each of the user's devices.
        case sent
        /// Not sent: they have written today.
        case written
        /// Not due after all (a day missed entirely, or already handled): the next one is scheduled.
        case rescheduled
    }

    private let pool: PostgresPool
    private let options: Options
    private let clock: @Sendable () -> Date
    private let logger: Logger

    package init(pool: PostgresPool, options: Options = Options(), clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        self.pool = pool
        self.options = options
        self.clock = clock
        self.logger = logger
    }

    /// One tick at `now`: what was done, per user.
    @discardableResult
    package func tick(at now: Date) async throws -> [UUID: Outcome] {
        var handled: [UUID: Outcome] = [:]
        while true {
            let rows = try await pool.query("select user_id, outcome from run_reminders(\(now), \(options.batchSize)::integer)")
            for row in rows {
                handled[try row.decode("user_id")] = Outcome(rawValue: try row.decode("outcome"))
            }
            if rows.count < options.batchSize { break }
        }
        let sent = handled.values.filter { $0 == .sent }.count
        if sent > 0 {
            Counter(label: "reminders_sent_total", dimensions: []).increment(by: sent)
            logger.info("reminders queued", metadata: ["users": "\(sent)"])
        }
        return handled
    }

    /// Runs until cancelled.
    package func run() async {
        await repeating(every: options.interval, startingAtOnce: true) {
            do {
                try await self.tick(at: self.clock())
            } catch {
                self.logger.warning("reminders: the tick failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
