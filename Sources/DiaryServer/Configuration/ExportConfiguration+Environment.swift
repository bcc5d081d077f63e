import DiaryCore
import DiaryHTTP
import Foundation

extension ExportConfiguration {
    /// EXPORTS_PER_DAY (default 10), CONCURRENT_EXPORTS (default 4, or half the pool if that is less: each export holds a
    /// connection while it streams); whether backups are on is `backups`'.
    static func fromEnvironment(poolSize: Int, backups: BackupConfiguration, _ environment: [String: String] = Setting.environment) throws -> ExportConfiguration {
        let perDay = try Setting.integer(flag: nil, environment: "EXPORTS_PER_DAY", default: 10, range: 1...1000, in: environment)
        let concurrent = try Setting.integer(flag: nil, environment: "CONCURRENT_EXPORTS", default: min(4, max(1, poolSize / 2)), range: 1...100, in: environment)
        return ExportConfiguration(exportsPerDay: perDay, concurrentExports: concurrent, backupsEnabled: backups.isOn)
    }
}
