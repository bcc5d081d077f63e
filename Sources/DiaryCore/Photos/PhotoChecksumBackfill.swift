package import Logging
package import PostgresClient

/// Gives photos stored before checksums were kept (migration 0017) their CRC-32, read from
/// their bytes in the store. Resumable: each photo's update commits on its own, and a run
/// takes up whatever still has none. Safe while servers run: it only fills in nulls, with the
/// value the bytes named by the photo's SHA-256 always have.
package struct PhotoChecksumBackfill: Sendable {
    /// The schema owner's pool: it writes both photo tables beneath their policies.
    let pool: PostgresPool
    let store: any PhotoStore
    let logger: Logger

    package struct Outcome: Sendable {
        package var filled = 0
        /// Hashes the database names whose bytes the store does not have.
        package var missing: [String] = []
    }

    package init(pool: PostgresPool, store: any PhotoStore, logger: Logger) {
        self.pool = pool
        self.store = store
        self.logger = logger
    }

    package func run(pageSize: Int = 100) async throws -> Outcome {
        var outcome = Outcome()
        try await PhotoHashes.forEach(in: pool, where: "content_crc32 is null", pageSize: pageSize) { hash, bytes in
            let checksum: UInt32
            do {
                checksum = try await store.checksum(of: hash, size: bytes)
            } catch PhotoStoreError.missing {
                logger.error("photos: a photo's bytes are missing from the store; it keeps no checksum", metadata: ["hash": "\(hash)"])
                outcome.missing.append(hash)
                return
            }
            try await pool.transaction([
                "update photo_uploads set content_crc32 = \(Int64(checksum)) where content_hash = \(hash) and content_crc32 is null",
                "update entry_photos set content_crc32 = \(Int64(checksum)) where content_hash = \(hash) and content_crc32 is null",
            ])
            outcome.filled += 1
        }
        return outcome
    }
}
