import ArgumentParser
import PostgresClient

/// The database flags shared by every subcommand.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "postgres:// URL of the database (default: $DATABASE_URL).")
    var databaseURL: String?

    @Option(name: .customLong("database-wait"), help: "Seconds to keep retrying an unreachable database at start-up (default: $DB_WAIT_SECONDS or 30).")
    var databaseWaitSeconds: Int?

    func configuration() throws -> PostgresConfiguration {
        try Setting.databaseURL(flag: databaseURL)
    }

    func waitDuration() throws -> Duration {
        .seconds(try Setting.integer(flag: databaseWaitSeconds, environment: "DB_WAIT_SECONDS", default: 30, range: 0...3600))
    }
}
