import ArgumentParser
import DiaryCore
import Logging
import PostgresClient

struct CheckCountersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-counters",
        abstract: "Recompute every maintained counter from scratch and report the differences.",
        discussion: """
            Compares each member's unread count and each diary's entry count with a count of
            the rows themselves, as the schema's owner (MIGRATION_DATABASE_URL, else
            DATABASE_URL). Prints one line per difference and exits 1 if there is any.
            With --repair it sets them right (safe while servers run) and exits 0.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Set every differing counter to its recomputed value.")
    var repair = false

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.check-counters")
        let differences = try await database.withOwnerPool(command: "check-counters", logger: logger) { pool in
            let reconciliation = CounterReconciliation(pool: pool)
            return repair ? try await reconciliation.repair() : try await reconciliation.differences()
        }
        for difference in differences {
            print(repair ? "repaired \(difference)" : "\(difference)")
        }
        print("\(differences.count) difference\(differences.count == 1 ? "" : "s")\(repair ? " repaired" : "")")
        if !repair && !differences.isEmpty { throw ExitCode.failure }
    }
}
