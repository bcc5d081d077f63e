import DiaryCore
import Foundation
import Logging
import PostgresClient

extension WorkerService {
    /// The workers `configuration` turns on, each with a small pool of its own; backups read
    /// photos from `store`, the server's own.
    static func keeping(_ configuration: BackupConfiguration, store: any PhotoStore, logger: Logger) -> [WorkerService] {
        var workers: [WorkerService] = []
        if let backups = configuration.backups {
            var owner = backups.owner
            owner.applicationName = "diary-server backup"
            let pool = PostgresPool(configuration: owner, options: .init(size: 2, acquireTimeout: .seconds(3600)), logger: logger)
            workers.append(WorkerService(pool: pool) {
                await BackupScheduler(pool: pool, store: store, options: backups.options, logger: logger).run()
            })
        }
        if let restorePoints = configuration.restorePoints {
            var superuser = restorePoints.superuser
            superuser.applicationName = "diary-server restore-point"
            let pool = PostgresPool(configuration: superuser, options: .init(size: 2, acquireTimeout: .seconds(3600)), logger: logger)
            workers.append(WorkerService(pool: pool) {
                await RestorePointScheduler(pool: pool, schedule: restorePoints.schedule, logger: logger).run()
            })
        }
        return workers
    }
}
