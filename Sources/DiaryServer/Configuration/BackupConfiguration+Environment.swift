import DiaryCore
import DiaryHTTP
import Foundation
import PostgresClient

extension BackupConfiguration {
    /// BACKUP_DIR turns backups on: BACKUP_INTERVAL_HOURS (24), BACKUP_KEEP (7), PG_DUMP,
    /// PG_RESTORE, BACKUP_SCRATCH_DATABASE_URL; the owner's connection is
    /// MIGRATION_DATABASE_URL, else DATABASE_URL. RESTORE_POINT_DATABASE_URL, a superuser's
    /// connection to the coordinator (or the one PostgreSQL), turns restore points on, every
    /// BACKUP_INTERVAL_HOURS too.
    static func fromEnvironment(database: DatabaseOptions, _ environment: [String: String] = Setting.environment) throws -> BackupConfiguration {
        var configuration = BackupConfiguration()
        var schedule = BackupSchedule()
        schedule.interval = .seconds(3600 * (try Setting.integer(flag: nil, environment: "BACKUP_INTERVAL_HOURS", default: 24, range: 1...8760, in: environment)))
        if let directory = Setting.string(flag: nil, environment: "BACKUP_DIR", in: environment) {
            var options = BackupScheduler.Options(directory: directory, pgDump: try BackupTools.pgDump(flag: nil), pgRestore: try BackupTools.pgRestore(flag: nil))
            options.schedule = schedule
            options.keep = try Setting.integer(flag: nil, environment: "BACKUP_KEEP", default: 7, range: 1...1000, in: environment)
            options.scratchDatabase = try BackupTools.scratchDatabase(flag: nil)
            configuration.backups = Backups(owner: try database.migrationConfiguration(), options: options)
        }
        if Setting.string(flag: nil, environment: "RESTORE_POINT_DATABASE_URL", in: environment) != nil {
            configuration.restorePoints = RestorePoints(
                superuser: try Setting.databaseURL(flag: nil, environment: "RESTORE_POINT_DATABASE_URL", in: environment), schedule: schedule)
        }
        return configuration
    }
}
