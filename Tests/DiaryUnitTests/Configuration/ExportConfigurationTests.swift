import Testing
@testable import DiaryHTTP
@testable import DiaryServer

/// EXPORTS_PER_DAY, CONCURRENT_EXPORTS, and whether backups are on, as `serve` reads them.
@Suite("Export settings")
struct ExportConfigurationTests {
    /// Fixed: two of the three were read from the process, whatever environment was given.
    @Test("every export setting comes from the environment given, and the defaults follow the pool")
    func fromTheGivenEnvironment() throws {
        let database = try DatabaseOptions.parse([])
        // Scheduled restore points are backups too: the Data Safety Center reports them.
        let restorePoints = try BackupConfiguration.fromEnvironment(database: database, ["RESTORE_POINT_DATABASE_URL": "postgres://postgres@db/diary"])
        #expect(restorePoints.isOn && restorePoints.restorePoints?.superuser.host == "db")
        let given = try ExportConfiguration.fromEnvironment(poolSize: 8, backups: restorePoints, ["EXPORTS_PER_DAY": "3", "CONCURRENT_EXPORTS": "2"])
        #expect(given.exportsPerDay == 3 && given.concurrentExports == 2 && given.backupsEnabled)
        let none = try BackupConfiguration.fromEnvironment(database: database, [:])
        let defaults = try ExportConfiguration.fromEnvironment(poolSize: 4, backups: none, [:])
        #expect(defaults.exportsPerDay == 10 && defaults.concurrentExports == 2 && !defaults.backupsEnabled)
        #expect(throws: (any Error).self) { try ExportConfiguration.fromEnvironment(poolSize: 8, backups: none, ["EXPORTS_PER_DAY": "0"]) }
    }
}
