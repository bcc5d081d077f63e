import ArgumentParser
import Logging
import PostgresClient

struct RebalanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebalance",
        abstract: "On a Citus coordinator: spread the shards over every registered worker, writable while they move.",
        discussion: """
            After a worker is added (citus_add_node), as a superuser (--database-url), while
            servers keep serving: moves shards to even the workers out, by logical replication
            (wal_level = logical on every node), and waits for the moves to finish. Citus's
            subscription role for each move gets BYPASSRLS, which its owner has, so the
            catch-up applies into tables that force row security (docs/cluster.md, "Scaling out on
            Citus").
            Keep it running until it ends: the moves are Citus's background job, and only it
            grants the roles. If it stopped while the job ran, run select citus_rebalance_stop(),
            then rebalance again: it moves the rest, or nothing.
            """
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.rebalance")
        let summary = try await database.withOwnerPool(command: "rebalance", logger: logger) { pool in
            try await CitusRebalance(pool: pool, logger: logger).run()
        }
        print(summary)
    }
}
