import DiaryCore

/// Exports' limits, whether this deployment takes backups, and how long a departure keeps
/// what a member wrote theirs (`CLOSED_DIARY_RETENTION_DAYS`).
package struct ExportConfiguration: Sendable {
    /// Exports one user may start per UTC day, diary and personal together.
    package var exportsPerDay = 10
    /// Exports streaming at once on this server. Each holds a database connection for as long
    /// as its client takes to download, so they are capped below the pool's size.
    package var concurrentExports = 4
    /// `BACKUP_DIR` is set: the Data Safety Center reports the backups.
    package var backupsEnabled = false
    /// How long a member who left may still export their own entries of that diary, and a
    /// closed diary (its last member left) is kept for its former members to restore.
    package var departureWindowDays = 30

    package init(exportsPerDay: Int = 10, concurrentExports: Int = 4, backupsEnabled: Bool = false, departureWindowDays: Int = 30) {
        self.exportsPerDay = exportsPerDay
        self.concurrentExports = concurrentExports
        self.backupsEnabled = backupsEnabled
        self.departureWindowDays = departureWindowDays
    }

    package var departureWindow: Duration { DepartureRepository.window(days: departureWindowDays) }
}
