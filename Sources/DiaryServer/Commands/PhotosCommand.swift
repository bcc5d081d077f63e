import ArgumentParser
import DiaryCore
import Logging

struct PhotosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photos",
        abstract: "Maintain the photo store.",
        subcommands: [BackfillChecksums.self]
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
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .customLong("photo-store"), help: "The photo store's folder (default: $PHOTO_STORE_DIR, else $DIARY_DATA_DIR/photos).")
        var photoStore: String?

        func run() async throws {
            let logger = AppLogger.make(label: "diary-server.photos")
            let store: FolderPhotoStore
            do {
                store = try BackupTools.photoStore(flag: photoStore)
            } catch {
                printError("photos backfill-checksums: \(error)")
                throw ExitCode.failure
            }
            let outcome = try await database.withOwnerPool(command: "photos backfill-checksums", logger: logger) { pool in
                try await PhotoChecksumBackfill(pool: pool, store: store, logger: logger).run()
            }
            print("\(outcome.filled) photo\(outcome.filled == 1 ? "" : "s") given a checksum; \(outcome.missing.count) missing from the store")
            if !outcome.missing.isEmpty { throw ExitCode.failure }
        }
    }
}
