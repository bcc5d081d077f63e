import DiaryCore
import Foundation
import Logging
import PostgresClient
import ServiceLifecycle

/// Automatic backups beside `serve`, with `BACKUP_DIR` set: the scheduler and the schema
/// owner's small pool it reads through (a backup reads every row, past row-level security).
struct BackupService: Service {
    let pool: PostgresPool
    let store: ConfiguredPhotoStore
    let options: BackupScheduler.Options
    let logger: Logger

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.run() }
            try await store.with(logger: logger) { store in
                let scheduler = BackupScheduler(pool: pool, store: store, options: options, logger: logger)
                await cancelWhenGracefulShutdown { await scheduler.run() }
            }
            group.cancelAll()
        }
        try? await pool.close()
    }
}
