import ArgumentParser
import Logging
import PostgresClient

extension DatabaseOptions {
    /// The server's connection: DATABASE_URL, as the unprivileged role diary_app.
    func configuration() throws -> PostgresConfiguration {
        try Setting.databaseURL(flag: databaseURL)
    }

    /// Migrations run as the owner of the schema: MIGRATION_DATABASE_URL, or DATABASE_URL
    /// where one role does both (a superuser in development).
    func migrationConfiguration() throws -> PostgresConfiguration {
        try Setting.databaseURL(flag: databaseURL, environment: ["MIGRATION_DATABASE_URL", "DATABASE_URL"])
    }

    func waitDuration() throws -> Duration {
        .seconds(try Setting.integer(flag: databaseWaitSeconds, environment: "DB_WAIT_SECONDS", default: 30, range: 0...3600))
    }
}
