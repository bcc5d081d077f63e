import ArgumentParser
import Foundation
import Logging
import PostgresClient

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the SQL migrations in sql/migrations, then the definitions in sql/definitions.",
        discussion: """
            Each file runs in its own transaction and is recorded, with its checksum, in
            schema_migrations. Migrators started at once take turns on an advisory lock.
            A file changed after it was applied stops the run and is named.
            Then each file of the definitions folder beside the migrations (functions, views,
            triggers, policies) runs again, in name order, if its text changed since it was
            applied or if any migration ran; schema_definitions records them.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(name: .customLong("migrations"), help: "Folder of NNNN_name.sql files (default: $DIARY_MIGRATIONS_DIR or sql/migrations).")
    var migrationsDirectory: String?

    @Flag(help: "List applied and pending migrations and definitions, and change nothing.")
    var status = false

    @Flag(name: .customLong("dry-run"), help: "Print the migrations that would run, and change nothing.")
    var dryRun = false

    @Flag(help: "On a Citus coordinator with its workers registered: then lay the schema out over the cluster, each diary on one shard (docs/cluster.md).")
    var citus = false

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.migrate")
        let files: [MigrationFile], definitions: [MigrationFile]
        do {
            let directory = URL(fileURLWithPath: MigrationFile.directory(flag: migrationsDirectory))
            files = try MigrationFile.load(from: directory)
            definitions = try MigrationFile.load(from: MigrationFile.definitionsDirectory(besideMigrations: directory), versionDigits: 2)
        } catch {
            printError("migrate: \(error)")
            throw ExitCode.failure
        }
        try await database.withOwnerPool(command: "migrate", logger: logger) { pool in
            let migrator = Migrator(
                pool: pool, files: files, definitions: definitions, logger: logger,
                settings: citus ? CitusSchema.migrationSettings : [], onCitus: citus
            )
            if status || dryRun {
                let statuses = try await migrator.status()
                for entry in statuses {
                    switch entry.state {
                    case .applied(let date) where status: print("applied  \(entry.file.fileName)  \(date)")
                    case .applied: break
                    case .pending: print("\(dryRun ? "would apply" : "pending ") \(entry.file.fileName)  sha256:\(entry.file.checksum.prefix(16))")
                    }
                }
                let pendingDefinitions = try await migrator.pendingDefinitions()
                for file in pendingDefinitions {
                    print("\(dryRun ? "would apply" : "pending ") definitions/\(file.fileName)  sha256:\(file.checksum.prefix(16))")
                }
                if dryRun && !statuses.contains(where: { $0.state == .pending }) && pendingDefinitions.isEmpty { print("nothing to apply") }
            } else {
                let cluster = citus ? CitusSchema(pool: pool, logger: logger) : nil
                try await cluster?.checkCluster()
                let run = try await migrator.migrate()
                if run.isEmpty { print("database is up to date") }
                if !run.migrations.isEmpty { print("applied \(run.migrations.map(\.fileName).joined(separator: ", "))") }
                if !run.definitions.isEmpty { print("applied definitions \(run.definitions.map(\.fileName).joined(separator: ", "))") }
                if let cluster {
                    try await cluster.respellPolicies()
                    let laidOut = try await cluster.apply()
                    try await cluster.grantViewsOnEveryNode()
                    try await cluster.setSessionDefaults()
                    print(laidOut.isEmpty ? "the cluster's layout is up to date" : "laid out \(laidOut.joined(separator: ", "))")
                }
            }
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
