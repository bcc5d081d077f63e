import ArgumentParser
import DiaryCore
import DiaryHTTP
import S3Client
import Foundation
import Logging
import PostgresClient

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up the database (pg_dump) and the photos into a directory; print the new backup's folder.",
        discussion: """
            Makes DIR/<UTC time>/ with database.dump (pg_dump -Fc of one snapshot) and
            manifest.json (the snapshot's row count of every table, the entries' checksum, the
            photos' hashes, the dump's SHA-256), and copies into DIR/photos/ the photo files
            not there yet. The folder appears only once complete; a failed run leaves none.
            Records the backup in backup_runs. Exits 1 on any failure, and when photos the
            database names are missing from the photo store (the backup is still made).

            Runs as the schema's owner (MIGRATION_DATABASE_URL, else DATABASE_URL), which needs
            BYPASSRLS, as migrating does: every table forces its row-level policies, and
            pg_dump refuses to dump rows a policy would hide.
              PG_DUMP          pg_dump to run (default: the first on PATH); its major version
                               must be the server's or newer
              PHOTO_STORE_DIR  the photo store (default DIARY_DATA_DIR/photos)
              PHOTO_STORE=s3 and S3_*  the bucket instead, unless --photo-store names a folder
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(name: .customLong("to"), help: "The backup directory (created if missing).")
    var directory: String

    @Option(name: .customLong("photo-store"), help: "The photo store's folder (default: $PHOTO_STORE_DIR, else $DIARY_DATA_DIR/photos).")
    var photoStore: String?

    @Option(name: .customLong("pg-dump"), help: "pg_dump to run (default: $PG_DUMP, else the first on PATH).")
    var pgDump: String?

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server.backup")
        let tool: ExternalTool
        let store: ConfiguredPhotoStore
        do {
            tool = try BackupTools.pgDump(flag: pgDump)
            store = try BackupTools.configuredPhotoStore(flag: photoStore)
        } catch {
            printError("backup: \(error)")
            throw ExitCode.failure
        }
        let directory = directory
        let result = try await store.with(logger: logger) { store in
            try await database.withOwnerPool(command: "backup", logger: logger) { pool in
                try await BackupRunner(pool: pool, store: store, pgDump: tool, logger: logger).backup(into: directory)
            }
        }
        let manifest = result.manifest
        printError("""
            backup: \(manifest.tables.count) tables, \(manifest.entries.count) entries, dump \(manifest.database.bytes) bytes; \
            photos: \(result.photosCopied) copied (\(result.bytesCopied) bytes), \(result.photosPresent) already there
            """)
        print(result.folder)
        if !result.lostPhotos.isEmpty {
            printError("backup: \(result.lostPhotos.count) photo(s) the database names are missing from the photo store: \(result.lostPhotos.joined(separator: ", "))")
            throw ExitCode.failure
        }
    }
}

/// The photo store a command or the backup scheduler reads, chosen before anything runs so
/// that a bad setting is refused at once; a bucket's HTTP client lives only inside `with`.
enum ConfiguredPhotoStore: Sendable {
    case folder(FolderPhotoStore)
    case bucket(S3Configuration, prefix: String)

    func with<Result: Sendable>(logger: Logger, _ body: (any PhotoStore) async throws -> Result) async throws -> Result {
        switch self {
        case .folder(let store): try await body(store)
        case .bucket(let bucket, let prefix): try await withS3PhotoStore((bucket, prefix), logger: logger) { try await body($0) }
        }
    }
}
