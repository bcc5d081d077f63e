import Testing
@testable import DiaryHTTP
@testable import DiaryServer

/// EXPORTS_PER_DAY, CONCURRENT_EXPORTS, BACKUP_DIR and RESTORE_POINT_DATABASE_URL, as `serve` reads them.
@Suite("Export settings")
struct ExportConfigurationTests {
    /// Fixed: two of the three were read from the process, whatever environment was given.
    @Test("every export setting comes from the environment given, and the defaults follow the pool")
    func fromTheGivenEnvironment() throws {
        let given = try ExportConfiguration.fromEnvironment(poolSize: 8, ["EXPORTS_PER_DAY": "3", "CONCURRENT_EXPORTS": "2", "BACKUP_DIR": "/backups"])
        #expect(given.exportsPerDay == 3 && given.concurrentExports == 2 && given.backupsEnabled)
        let defaults = try ExportConfiguration.fromEnvironment(poolSize: 4, [:])
        #expect(defaults.exportsPerDay == 10 && defaults.concurrentExports == 2 && !defaults.backupsEnabled)
        #expect(throws: (any Error).self) { try ExportConfiguration.fromEnvironment(poolSize: 8, ["EXPORTS_PER_DAY": "0"]) }
        // Scheduled restore points are backups too: the Data Safety Center reports them.
        #expect(try ExportConfiguration.fromEnvironment(poolSize: 8, ["RESTORE_POINT_DATABASE_URL": "postgres://postgres@db/diary"]).backupsEnabled)
    }
}
