import ArgumentParser
import DiaryCore
import Foundation
import Logging
import PostgresClient

struct RestorePointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore-point",
        abstract: "Take a named restore point: on a Citus coordinator on every node at once.",
        discussion: """
            As a superuser (--database-url; both functions are superusers' by default): on a
            Citus coordinator citus_create_restore_point, consistent across the nodes; on one
            PostgreSQL pg_create_restore_point. Each node's WAL archive then restores to it
            (docs/cluster.md, "Restoring a cluster to one moment").
            Recorded in backup_runs, which the Data Safety Center reports. Prints the name.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The point's name: 1 to 63 ASCII letters, digits or -_.: (default: diary-<UTC time>).")
    var name: String?

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.restore-point")
        let name = self.name ?? RestorePoint.defaultName(at: Date())
        let taken = try await database.withOwnerPool(command: "restore-point", logger: logger) { pool in
            try await RestorePoint.take(named: name, pool: pool, logger: logger)
        }
        print(taken.name)
    }
}
