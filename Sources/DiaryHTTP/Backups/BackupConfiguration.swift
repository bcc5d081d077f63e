package import DiaryCore
package import PostgresClient

/// What `serve` runs beside the API to keep the data: automatic backups (`BACKUP_DIR`) and
/// scheduled restore points (`RESTORE_POINT_DATABASE_URL`), each off unless set.
package struct BackupConfiguration: Sendable {
    package struct Backups: Sendable {
        /// The schema owner's connection: a backup reads every row, past row-level security.
        package var owner: PostgresConfiguration
        package var options: BackupScheduler.Options

        package init(owner: PostgresConfiguration, options: BackupScheduler.Options) {
            self.owner = owner
            self.options = options
        }
    }

    package struct RestorePoints: Sendable {
        /// A superuser's connection: Citus's restore points are superusers' only.
        package var superuser: PostgresConfiguration
        package var schedule: BackupSchedule

        package init(superuser: PostgresConfiguration, schedule: BackupSchedule) {
            self.superuser = superuser
            self.schedule = schedule
        }
    }

    package var backups: Backups?
    package var restorePoints: RestorePoints?

    package init(backups: Backups? = nil, restorePoints: RestorePoints? = nil) {
        self.backups = backups
        self.restorePoints = restorePoints
    }

    /// Whether this deployment keeps backups of either kind: the Data Safety Center says so.
    package var isOn: Bool { backups != nil || restorePoints != nil }
}
