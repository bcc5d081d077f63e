package import Foundation
import PostgresClient

/// When a server's automatic backups run: each server looks every `checkEvery` (the interval,
/// if shorter), and makes one when the newest is older than `interval`. Looking more often
/// than the interval means a server that was down when one was due makes it soon after it
/// starts. Dumps (`BackupScheduler`) and restore points (`RestorePointScheduler`) keep it alike.
package struct BackupSchedule: Sendable {
    /// `BACKUP_INTERVAL_HOURS` (default 24).
    package var interval: Duration = .seconds(24 * 3600)
    package var checkEvery: Duration = .seconds(900)
    /// The first look after start: not at once, so that a fleet restarting together does not
    /// contend for the lock together.
    package var firstCheckAfter: Duration = .seconds(60)

    package init() {}

    package func isDue(newest: Date?, at now: Date) -> Bool {
        guard let newest else { return true }
        return now.timeIntervalSince(newest) >= interval.totalSeconds
    }

    /// Runs `look` on this schedule until cancelled.
    func run(_ look: @Sendable () async -> Void) async {
        do { try await Task.sleep(for: firstCheckAfter) } catch { return }
        await repeating(every: max(.seconds(1), min(checkEvery, interval)), startingAtOnce: true, look)
    }
}
