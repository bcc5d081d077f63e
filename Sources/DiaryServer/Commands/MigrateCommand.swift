import ArgumentParser
import Foundation
import Logging
import PostgresClient

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the SQL migrations in sql/migrations.",
        discussion: """
            Each file runs in its own transaction and is recorded, with its checksum, in
            schema_migrations. Migrators started at once take turns on an advisory lock.
            A file changed after it was applied stops the run and is named.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(name: .customLong("migrations"), help: "Folder of NNNN_name.sql files (default: $DIARY_MIGRATIONS_DIR or sql/migrations).")
    var migrationsDirectory: String?

    @Flag(help: "List applied and pending migrations, and change nothing.")
    var status = false

    @Flag(name: .customLong("dry-run"), help: "Print the migrations that would run, and change nothing.")
    var dryRun = false

    @Flag(help: "On a Citus coordinator with its workers registered: then lay the schema out over the cluster, each diary on one shard (README, \"Scaling out on Citus\").")
    var citus = false

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.migrate")
        let files: [MigrationFile]
        do {
            let directory = MigrationFile.directory(flag: migrationsDirectory)
            files = try MigrationFile.load(from: URL(fileURLWithPath: directory))
        } catch {
            printError("migrate: \(error)")
            throw ExitCode.failure
        }
        try await database.withOwnerPool(command: "migrate", logger: logger) { pool in
            let migrator = Migrator(pool: pool, files: files, logger: logger, settings: citus ? CitusSchema.migrationSettings : [], statementByStatement: citus)
            if status || dryRun {
                let statuses = try await migrator.status()
                for entry in statuses {
                    switch entry.state {
                    case .applied(let date) where status: print("applied  \(entry.file.fileName)  \(date)")
                    case .applied: break
                    case .pending: print("\(dryRun ? "would apply" : "pending ") \(entry.file.fileName)  sha256:\(entry.file.checksum.prefix(16))")
                    }
                }
                if dryRun && !statuses.contains(where: { $0.state == .pending }) { print("nothing to apply") }
            } else {
                let cluster = citus ? CitusSchema(pool: pool, logger: logger) : nil
                try await cluster?.checkCluster()
                let applied = try await migrator.migrate()
                print(applied.isEmpty ? "database is up to date" : "applied \(applied.map(\.fileName).joined(separator: ", "))")
                if let cluster {
                    try await cluster.respellPolicies()
                    let laidOut = try await cluster.apply()
                    print(laidOut.isEmpty ? "the cluster's layout is up to date" : "laid out \(laidOut.joined(separator: ", "))")
                }
            }
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
