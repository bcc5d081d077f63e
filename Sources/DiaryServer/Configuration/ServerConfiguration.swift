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
    var auth: AuthConfiguration
    /// Requests worked on at once; the rest get 503 at the door (see ConcurrencyLimitMiddleware).
    var maxConcurrentRequests: Int = ServerConfiguration.defaultMaxConcurrentRequests
    /// Read-only requests queue their transactions on the pool's shared connections
    /// (`DB_SHARED_READS=1`). Off by default: more throughput under load, but a request
    /// queued behind a slow one waits for it, and the timeline's p99 rose (see Benchmarks/results).
    var sharedReads = false

    static let defaultHost = "127.0.0.1"
    static let defaultPort = 8080
    static let defaultPoolSize = 8
    static let maximumPoolSize = 200
    static let defaultMaxConcurrentRequests = 256
    static let defaultAcquireTimeoutMilliseconds = 2000
    static let defaultStatementTimeoutMilliseconds = 5000
}

/// Sign-in and token settings.
struct AuthConfiguration: Sendable {
    /// `DIARY_ENV=production`: no dev sign-in, no generated keys.
    var production: Bool
    /// `DIARY_DEV_AUTH=1` outside production.
    var devSignIn: Bool
    var jwtKeyFile: String?
    /// Where development keeps its generated JWT key (`DIARY_DATA_DIR`, default .data).
    var dataDirectory: String
    var apple: AppleIdentityVerifier.Configuration

    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AuthConfiguration {
        let production = environment["DIARY_ENV"] == "production"
        let devSignIn = environment["DIARY_DEV_AUTH"] == "1"
        if production && devSignIn {
            throw ConfigurationError(description: "DIARY_DEV_AUTH=1 is refused when DIARY_ENV=production")
        }
        let jwks = environment["APPLE_JWKS_URL"] ?? "https://appleid.apple.com/auth/keys"
        guard let jwksURL = URL(string: jwks), jwksURL.scheme == "https" || !production else {
            throw ConfigurationError(description: "APPLE_JWKS_URL must be an https URL")
        }
        let audiences = Set((environment["APPLE_AUDIENCE"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        if production && audiences.isEmpty {
            throw ConfigurationError(description: "APPLE_AUDIENCE must list the app's bundle ids in production")
        }
        return AuthConfiguration(
            production: production,
            devSignIn: devSignIn && !production,
            jwtKeyFile: environment["DIARY_JWT_KEY_FILE"].flatMap { $0.isEmpty ? nil : $0 },
            dataDirectory: environment["DIARY_DATA_DIR"] ?? ".data",
            apple: .init(audiences: audiences, jwksURL: jwksURL, jwksFile: environment["APPLE_JWKS_FILE"].flatMap { $0.isEmpty ? nil : $0 })
        )
    }
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
        try databaseURL(flag: flag, environment: [name])
    }

    /// The first of `names` that is set wins, after the flag.
    static func databaseURL(flag: String?, environment names: [String]) throws -> PostgresConfiguration {
        let name = names.first { string(flag: nil, environment: $0) != nil } ?? names[names.count - 1]
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
