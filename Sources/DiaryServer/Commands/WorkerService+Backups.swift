import DiaryCore
import DiaryHTTP
import Logging
import PostgresClient

extension WorkerService {
    /// Automatic backups beside `serve`, with `BACKUP_DIR` set: the scheduler and the schema
    /// owner's small pool it reads through (a backup reads every row, past row-level security).
    static func backups(pool: PostgresPool, store: ConfiguredPhotoStore, options: BackupScheduler.Options, logger: Logger) -> WorkerService {
        WorkerService(pool: pool) {
            try await store.with(logger: logger) { store in
                await BackupScheduler(pool: pool, store: store, options: options, logger: logger).run()
            }
        }
    }

    /// Scheduled restore points beside `serve`, with `RESTORE_POINT_DATABASE_URL` set: a
    /// superuser's small pool, since Citus's restore points are superusers' only.
    static func restorePoints(pool: PostgresPool, schedule: BackupSchedule, logger: Logger) -> WorkerService {
        WorkerService(pool: pool) {
            await RestorePointScheduler(pool: pool, schedule: schedule, logger: logger).run()
        }
    }
}
