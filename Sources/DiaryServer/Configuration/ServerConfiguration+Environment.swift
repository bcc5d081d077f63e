import DiaryCore
import DiaryHTTP
import Foundation
import PostgresClient

extension ServerConfiguration {
    /// `serve`'s whole configuration: its flags first, then the environment (the settings
    /// table in `serve --help` and docs/operations.md), then the defaults.
    static func fromEnvironment(
        host: String?, port: Int?, poolSize: Int?, database: DatabaseOptions, _ environment: [String: String] = Setting.environment
    ) throws -> ServerConfiguration {
        var databaseConfiguration = try database.configuration()
        databaseConfiguration.statementTimeout = .milliseconds(
            try Setting.integer(flag: nil, environment: "DB_STATEMENT_TIMEOUT_MS", default: defaultStatementTimeoutMilliseconds, range: 1...600_000, in: environment)
        )
        databaseConfiguration.preparedStatements = try Setting.integer(flag: nil, environment: "DB_PREPARED_STATEMENTS", default: 1, range: 0...1, in: environment) == 1
        var listenConfiguration = databaseConfiguration
        if Setting.string(flag: nil, environment: "DATABASE_LISTEN_URL", in: environment) != nil {
            listenConfiguration = try Setting.databaseURL(flag: nil, environment: "DATABASE_LISTEN_URL", in: environment)
            listenConfiguration.statementTimeout = databaseConfiguration.statementTimeout
        }
        let auth = try AuthConfiguration.fromEnvironment(environment)
        let push = try PushConfiguration.fromEnvironment(production: auth.production, environment)
        let billing = try BillingConfiguration.fromEnvironment(production: auth.production, environment)
        var configuration = ServerConfiguration(
            host: Setting.string(flag: host, environment: "HOST", default: defaultHost, in: environment)!,
            port: try Setting.integer(flag: port, environment: "PORT", default: defaultPort, range: 0...65535, in: environment),
            database: databaseConfiguration,
            listenDatabase: listenConfiguration,
            poolOptions: .init(
                size: try Setting.integer(flag: poolSize, environment: "DB_POOL_SIZE", default: defaultPoolSize, range: 1...maximumPoolSize, in: environment),
                acquireTimeout: .milliseconds(
                    try Setting.integer(flag: nil, environment: "DB_ACQUIRE_TIMEOUT_MS", default: defaultAcquireTimeoutMilliseconds, range: 1...60_000, in: environment)
                )
            ),
            databaseWait: try database.waitDuration(),
            auth: auth,
            maxConcurrentRequests: try Setting.integer(flag: nil, environment: "MAX_CONCURRENT_REQUESTS", default: defaultMaxConcurrentRequests, range: 1...100_000, in: environment),
            sharedReads: try Setting.integer(flag: nil, environment: "DB_SHARED_READS", default: 0, range: 0...1, in: environment) == 1
        )
        configuration.citus = try Setting.integer(flag: nil, environment: "DB_CITUS", default: 0, range: 0...1, in: environment) == 1
        configuration.push = push
        configuration.apple = try AppleConfiguration.fromEnvironment(production: auth.production, environment)
        configuration.billing = billing
        configuration.serviceStatus = try ServiceStatusConfiguration.fromEnvironment(environment)
        configuration.backups = try BackupConfiguration.fromEnvironment(database: database, environment)
        configuration.export = try ExportConfiguration.fromEnvironment(poolSize: configuration.poolOptions.size, backups: configuration.backups, environment)
        configuration.closedDiaries = try ClosedDiaryConfiguration.fromEnvironment(production: auth.production, environment)
        configuration.photos = try PhotoConfiguration.fromEnvironment(production: auth.production, environment)
        configuration.openAPIFile = Setting.string(flag: nil, environment: "DIARY_OPENAPI_FILE", in: environment)
        if Setting.string(flag: nil, environment: "PUBLIC_URL", in: environment) != nil {
            configuration.publicURL = try Setting.url(
                environment: "PUBLIC_URL", default: ServerConfiguration.developmentPublicURL, production: auth.production, in: environment)
        }
        configuration.invitePage = try InvitePageConfiguration.fromEnvironment(production: auth.production, environment)
        do {
            configuration.trustedProxies = try TrustedProxies(parsing: Setting.string(flag: nil, environment: "TRUSTED_PROXIES", default: "", in: environment)!)
        } catch {
            throw ConfigurationError(description: "TRUSTED_PROXIES: \(error)")
        }
        return configuration
    }
}
