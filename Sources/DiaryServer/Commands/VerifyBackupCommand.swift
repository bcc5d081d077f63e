import ArgumentParser
import DiaryCore
import Logging
import PostgresClient

struct VerifyBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-backup",
        abstract: "Restore a backup into a scratch database and check it against its manifest.",
        discussion: """
            Checks the dump's SHA-256, restores it (pg_restore) into a new database
            diary_verify_<random> on the scratch server, compares every table's row count and
            the entries' checksum with what the backup recorded from its snapshot, checks
            every photo file's SHA-256, drops the scratch database, prints a summary and
            records the outcome in backup_runs. Exits 1 on any difference.

            PATH is a backup's folder, or the backup directory: then its newest complete backup.
            The scratch role needs CREATEDB only (it owns what it restores); by default it is
            the schema's owner (MIGRATION_DATABASE_URL, else DATABASE_URL), which records the
            outcome whichever scratch server is used.
              PG_RESTORE                    pg_restore to run (default: the first on PATH)
              BACKUP_SCRATCH_DATABASE_URL   a postgres:// URL for the scratch databases
            """
    )

    @Argument(help: "A backup's folder, or the backup directory (its newest complete backup).")
    var path: String

    @OptionGroup var database: DatabaseOptions

    @Option(name: .customLong("scratch-database-url"), help: "postgres:// URL of a role that may CREATE DATABASE (default: $BACKUP_SCRATCH_DATABASE_URL, else the owner's).")
    var scratchDatabaseURL: String?

    @Option(name: .customLong("pg-restore"), help: "pg_restore to run (default: $PG_RESTORE, else the first on PATH).")
    var pgRestore: String?

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.verify-backup")
        let tool: ExternalTool
        let scratch: PostgresConfiguration
        do {
            tool = try BackupTools.pgRestore(flag: pgRestore)
            scratch = try BackupTools.scratchDatabase(flag: scratchDatabaseURL) ?? database.migrationConfiguration()
        } catch {
            printError("verify-backup: \(error)")
            throw ExitCode.failure
        }
        let path = path
        let (report, recorded) = try await database.withOwnerPool(command: "verify-backup", logger: logger) { pool in
            let report = try await BackupVerifier(scratch: scratch, pgRestore: tool, logger: logger).verify(path)
            let recorded = try await BackupRunner.recordVerification(pool: pool, location: report.folder, verified: report.verified)
            return (report, recorded)
        }
        print(Self.summary(report))
        if !recorded { printError("verify-backup: no backup_runs row names \(report.folder); the outcome is not recorded") }
        if !report.verified { throw ExitCode.failure }
    }

    static func summary(_ report: BackupVerifier.Report) -> String {
        var lines = [
            "backup:          \(report.folder)",
            "tables compared: \(report.tablesCompared)",
            "entries:         \(report.entries)",
            "photos checked:  \(report.photosChecked)",
        ]
        lines += report.notes.map { "note: \($0)" }
        if report.verified {
            lines.append("OK")
        } else {
            lines.append("FAILED: \(report.differences.count) difference\(report.differences.count == 1 ? "" : "s")")
            lines += report.differences.map { "  \($0)" }
        }
        return lines.joined(separator: "\n")
    }
}
