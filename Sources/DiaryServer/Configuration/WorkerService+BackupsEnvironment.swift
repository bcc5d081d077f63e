import DiaryCore
import Foundation
import Logging
import PostgresClient
import DiaryHTTP

extension WorkerService {
    /// nil without BACKUP_DIR. BACKUP_INTERVAL_HOURS (24), BACKUP_KEEP (7), PG_DUMP,
    /// PG_RESTORE, BACKUP_SCRATCH_DATABASE_URL; the owner's connection is
    /// MIGRATION_DATABASE_URL, else DATABASE_URL.
    static func backupsFromEnvironment(database: DatabaseOptions, logger: Logger) throws -> WorkerService? {
        guard let directory = Setting.string(flag: nil, environment: "BACKUP_DIR") else { return nil }
        var options = BackupScheduler.Options(directory: directory, pgDump: try BackupTools.pgDump(flag: nil), pgRestore: try BackupTools.pgRestore(flag: nil))
        options.schedule = try backupScheduleFromEnvironment()
        options.keep = try Setting.integer(flag: nil, environment: "BACKUP_KEEP", default: 7, range: 1...1000)
        options.scratchDatabase = try BackupTools.scratchDatabase(flag: nil)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var owner = try database.migrationConfiguration()
        owner.applicationName = "diary-server backup"
        let pool = PostgresPool(configuration: owner, options: .init(size: 2, acquireTimeout: .seconds(3600)), logger: logger)
        return .backups(pool: pool, store: try BackupTools.configuredPhotoStore(flag: nil), options: options, logger: logger)
    }

    /// nil without RESTORE_POINT_DATABASE_URL, a superuser's connection to the coordinator
    /// (or to the one PostgreSQL); BACKUP_INTERVAL_HOURS (24) as for BACKUP_DIR's backups.
    static func restorePointsFromEnvironment(logger: Logger) throws -> WorkerService? {
        guard Setting.string(flag: nil, environment: restorePointURLSetting) != nil else { return nil }
        var superuser = try Setting.databaseURL(flag: nil, environment: restorePointURLSetting)
        superuser.applicationName = "diary-server restore-point"
        let pool = PostgresPool(configuration: superuser, options: .init(size: 2, acquireTimeout: .seconds(3600)), logger: logger)
        return .restorePoints(pool: pool, schedule: try backupScheduleFromEnvironment(), logger: logger)
    }

    static let restorePointURLSetting = "RESTORE_POINT_DATABASE_URL"

    static func backupScheduleFromEnvironment() throws -> BackupSchedule {
        var schedule = BackupSchedule()
        schedule.interval = .seconds(3600 * (try Setting.integer(flag: nil, environment: "BACKUP_INTERVAL_HOURS", default: 24, range: 1...8760)))
        return schedule
    }
}
