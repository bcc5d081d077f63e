import Foundation
import PostgresClient

/// Everything `serve` needs, from environment variables overridden by flags.
struct ServerConfiguration: Sendable {
    var host: String
    var port: Int
    var database: PostgresConfiguration
    var poolOptions: PostgresPool.Options
    /// How long start-up keeps retrying an unreachable database before giving up.
    var databaseWait: Duration

    static let defaultHost = "127.0.0.1"
    static let defaultPort = 8080
    static let defaultPoolSize = 8
    static let maximumPoolSize = 200
}

/// Why the configuration was refused; the message never echoes a password.
struct ConfigurationError: Error, CustomStringConvertible {
    var description: String
}

/// Reads one setting: a flag wins over the environment variable, which wins over the default.
enum Setting {
    static func string(flag: String?, environment name: String, default defaultValue: String? = nil) -> String? {
        if let flag { return flag }
        if let value = ProcessInfo.processInfo.environment[name], !value.isEmpty { return value }
        return defaultValue
    }

    static func integer(flag: Int?, environment name: String, default defaultValue: Int, range: ClosedRange<Int>) throws -> Int {
        let value: Int
        if let flag {
            value = flag
        } else if let text = ProcessInfo.processInfo.environment[name], !text.isEmpty {
            guard let parsed = Int(text) else { throw ConfigurationError(description: "\(name) must be a whole number, not \"\(text)\"") }
            value = parsed
        } else {
            value = defaultValue
        }
        guard range.contains(value) else {
            throw ConfigurationError(description: "\(name) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
        }
        return value
    }

    static func databaseURL(flag: String?, environment name: String = "DATABASE_URL") throws -> PostgresConfiguration {
        guard let url = string(flag: flag, environment: name) else {
            throw ConfigurationError(description: "\(name) is not set; give a postgres:// URL in \(name) or with --database-url")
        }
        do {
            return try PostgresConfiguration(url: url)
        } catch let error as PostgresError {
            throw ConfigurationError(description: error.message)
        }
    }
}
