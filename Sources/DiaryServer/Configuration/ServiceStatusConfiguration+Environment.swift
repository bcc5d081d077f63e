import DiaryCore
import DiaryHTTP
import Foundation

extension ServiceStatusConfiguration {
    /// MAINTENANCE_MODE (0 or 1, default 0) and MINIMUM_APP_VERSION (x.y.z, default none).
    static func fromEnvironment(_ environment: [String: String] = Setting.environment) throws -> ServiceStatusConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        var status = ServiceStatusConfiguration()
        switch value("MAINTENANCE_MODE") {
        case nil, "0": status.maintenance = false
        case "1": status.maintenance = true
        case let other?: throw ConfigurationError(description: "MAINTENANCE_MODE must be 0 or 1, not \(other)")
        }
        if let text = value("MINIMUM_APP_VERSION") {
            guard let version = AppVersion(text) else {
                throw ConfigurationError(description: "MINIMUM_APP_VERSION must be a version such as 1.4.2, not \(text)")
            }
            status.minimumAppVersion = version
        }
        return status
    }
}
