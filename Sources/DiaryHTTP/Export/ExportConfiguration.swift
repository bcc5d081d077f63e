import DiaryCore

/// Exports' limits, and whether this deployment takes backups. How long a departure keeps what
/// a member wrote theirs is `ClosedDiaryConfiguration`'s.
package struct ExportConfiguration: Sendable {
    /// Exports one user may start per UTC day, diary and personal together.
    package var exportsPerDay = 10
    /// Exports streaming at once on this server. Each holds a database connection for as long
    /// as its client takes to download, so they are capped below the pool's size.
    package var concurrentExports = 4
    /// `BACKUP_DIR` is set: the Data Safety Center reports the backups.
    package var backupsEnabled = false

    package init(exportsPerDay: Int = 10, concurrentExports: Int = 4, backupsEnabled: Bool = false) {
        self.exportsPerDay = exportsPerDay
        self.concurrentExports = concurrentExports
        self.backupsEnabled = backupsEnabled
    }
}
