import ArgumentParser
import DiaryCore
import DiaryHTTP
import S3Client
import Logging

struct PhotosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photos",
        abstract: "Maintain the photo store.",
        subcommands: [BackfillChecksums.self, CopyToStore.self]
    )

    struct BackfillChecksums: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backfill-checksums",
            abstract: "Give photos uploaded before checksums were kept their CRC-32, from the store.",
            discussion: """
                Exports store photos uncompressed, and declare each one's CRC-32 before its bytes
                so that streaming unzip tools can read them; uploads keep it since migration 0017.
                This reads the bytes of every older photo once and records its checksum (until
                then an export reads such a photo twice). Resumable and safe while servers run;
                prints how many it filled and exits 1 if photos are missing from the store.
                Runs as the schema's owner (MIGRATION_DATABASE_URL, else DATABASE_URL).
                  PHOTO_STORE_DIR  the photo store (default DIARY_DATA_DIR/photos)
                  PHOTO_STORE=s3 and S3_*  the bucket instead, unless --photo-store names a folder
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .customLong("photo-store"), help: "The photo store's folder (default: $PHOTO_STORE_DIR, else $DIARY_DATA_DIR/photos).")
        var photoStore: String?

        func run() async throws {
            let logger = AppLogger.make(label: "diary-server.photos")
            let store: ConfiguredPhotoStore
            do {
                store = try BackupTools.configuredPhotoStore(flag: photoStore)
            } catch {
                printError("photos backfill-checksums: \(error)")
                throw ExitCode.failure
            }
            let outcome = try await store.with(logger: logger) { store in
                try await database.withOwnerPool(command: "photos backfill-checksums", logger: logger) { pool in
                    try await PhotoChecksumBackfill(pool: pool, store: store, logger: logger).run()
                }
            }
            print("\(outcome.filled) photo\(outcome.filled == 1 ? "" : "s") given a checksum; \(outcome.missing.count) missing from the store")
            if !outcome.missing.isEmpty { throw ExitCode.failure }
        }
    }

    struct CopyToStore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy-to-store",
            abstract: "Copy every photo of the folder store into the S3 store (PHOTO_STORE=s3 and S3_*).",
            discussion: """
                Copies each photo the database names from the folder (--from, else PHOTO_STORE_DIR,
                else DIARY_DATA_DIR/photos) into the bucket that PHOTO_STORE=s3 and the S3_*
                settings name, after checking its bytes against the SHA-256 that names them; the
                bucket checks what it receives (Content-MD5). A photo the bucket has already is
                skipped, so the command is resumable, and a second run copies only what came since.
                Safe while servers run. Prints what it did; exits 1 if a photo is missing or corrupt.
                Runs as the schema's owner (MIGRATION_DATABASE_URL, else DATABASE_URL).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .customLong("from"), help: "The folder store (default: $PHOTO_STORE_DIR, else $DIARY_DATA_DIR/photos).")
        var folder: String?

        func run() async throws {
            let logger = AppLogger.make(label: "diary-server.photos")
            let source: FolderPhotoStore
            let bucket: (bucket: S3Configuration, prefix: String)
            do {
                source = try BackupTools.photoStore(flag: folder)
                guard let s3 = try PhotoConfiguration.fromEnvironment(production: false).s3 else {
                    throw ConfigurationError(description: "set PHOTO_STORE=s3 and the S3_* settings of the bucket to copy into")
                }
                bucket = s3
            } catch {
                printError("photos copy-to-store: \(error)")
                throw ExitCode.failure
            }
            let outcome = try await database.withOwnerPool(command: "photos copy-to-store", logger: logger) { pool in
                try await withS3PhotoStore(bucket, logger: logger) { target in
                    try await PhotoStoreCopy(pool: pool, source: source, target: target, logger: logger).run()
                }
            }
            print("\(outcome.copied) copied, \(outcome.present) already there, \(outcome.missing.count) missing, \(outcome.corrupt.count) corrupt")
            if !outcome.missing.isEmpty || !outcome.corrupt.isEmpty { throw ExitCode.failure }
        }
    }
}
