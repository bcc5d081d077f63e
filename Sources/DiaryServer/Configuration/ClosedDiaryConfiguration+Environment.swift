import DiaryCore
import DiaryHTTP
import Foundation

extension ClosedDiaryConfiguration {
    /// CLOSED_DIARY_RETENTION_DAYS (default 30), or CLOSED_DIARY_RETENTION_SECONDS, which
    /// production refuses (a window of seconds is for watching a purge in a test), and
    /// CLOSED_DIARY_ROUND_SECONDS (default 600).
    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> ClosedDiaryConfiguration {
        let days = try Setting.integer(flag: nil, environment: "CLOSED_DIARY_RETENTION_DAYS", default: 30, range: 1...3650, in: environment)
        var window: Duration = .seconds(days * 86_400)
        if Setting.string(flag: nil, environment: "CLOSED_DIARY_RETENTION_SECONDS", in: environment) != nil {
            guard !production else {
                throw ConfigurationError(description: "CLOSED_DIARY_RETENTION_SECONDS is refused when DIARY_ENV=production: set CLOSED_DIARY_RETENTION_DAYS")
            }
            window = .seconds(try Setting.integer(flag: nil, environment: "CLOSED_DIARY_RETENTION_SECONDS", default: 1, range: 1...(3650 * 86_400), in: environment))
        }
        let round = try Setting.integer(flag: nil, environment: "CLOSED_DIARY_ROUND_SECONDS", default: 600, range: 1...86_400, in: environment)
        return ClosedDiaryConfiguration(window: window, round: .seconds(round))
    }
}
