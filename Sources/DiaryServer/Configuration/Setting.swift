import DiaryCore
import Foundation
import PostgresClient

/// Reads one setting from the process's environment: a flag wins over the variable, which
/// wins over the default. Every setting of every command is read in this folder, from the
/// environment it is given (`OneShapeTests` fails on a read elsewhere).
enum Setting {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static func string(flag: String?, environment name: String, default defaultValue: String? = nil, in environment: [String: String] = Setting.environment) -> String? {
        if let flag { return flag }
        if let value = environment[name], !value.isEmpty { return value }
        return defaultValue
    }

    static func integer(
        flag: Int?, environment name: String, default defaultValue: Int, range: ClosedRange<Int>, in environment: [String: String] = Setting.environment
    ) throws -> Int {
        let value: Int
        if let flag {
            value = flag
        } else if let text = string(flag: nil, environment: name, in: environment) {
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

    /// The text of the file `path` names, for the error naming `variable` when it cannot be read.
    static func fileText(_ path: String, variable: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(description: "\(variable): cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// An https URL (any URL outside production) from `name`, or `defaultValue`.
    static func url(environment name: String, default defaultValue: URL, production: Bool, in environment: [String: String] = Setting.environment) throws -> URL {
        guard let text = string(flag: nil, environment: name, in: environment) else { return defaultValue }
        guard let url = URL(string: text), url.host != nil, url.scheme == "https" || (!production && url.scheme == "http") else {
            throw ConfigurationError(description: "\(name) must be an https URL, not \"\(text)\"")
        }
        return url
    }

    static func databaseURL(flag: String?, environment name: String = "DATABASE_URL", in environment: [String: String] = Setting.environment) throws -> PostgresConfiguration {
        try databaseURL(flag: flag, environment: [name], in: environment)
    }

    /// The first of `names` that is set wins, after the flag.
    static func databaseURL(flag: String?, environment names: [String], in environment: [String: String] = Setting.environment) throws -> PostgresConfiguration {
        let name = names.first { string(flag: nil, environment: $0, in: environment) != nil } ?? names[names.count - 1]
        guard let url = string(flag: flag, environment: name, in: environment) else {
            throw ConfigurationError(description: "\(name) is not set; give a postgres:// URL in \(name) or with --database-url")
        }
        do {
            return try PostgresConfiguration(url: url)
        } catch let error as PostgresError {
            throw ConfigurationError(description: error.message)
        }
    }
}
