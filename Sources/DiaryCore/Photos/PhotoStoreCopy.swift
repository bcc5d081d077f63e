package import Logging
import NIOCore
package import PostgresClient

/// Copies every photo the database names from one store into another (the folder into a
/// bucket, before switching `PHOTO_STORE`). Resumable: a photo the target has already is left
/// alone, so a second run copies only what came since. Each photo's bytes are checked against
/// the SHA-256 that names them before they go, and the target checks what it received
/// (S3's Content-MD5). Safe while servers run: objects are named by their content.
package struct PhotoStoreCopy: Sendable {
    /// The schema owner's pool, to read both photo tables beneath their policies.
    let pool: PostgresPool
    let source: any PhotoStore
    let target: any PhotoStore
    let logger: Logger

    package struct Outcome: Sendable, Equatable {
        package var copied = 0
        package var present = 0
        /// Named by the database but not in the source.
        package var missing: [String] = []
        /// In the source, but their bytes are not the ones their name hashes.
        package var corrupt: [String] = []
    }

    package init(pool: PostgresPool, source: any PhotoStore, target: any PhotoStore, logger: Logger) {
        self.pool = pool
        self.source = source
        self.target = target
        self.logger = logger
    }

    package func run(pageSize: Int = 100) async throws -> Outcome {
        var outcome = Outcome()
        try await PhotoHashes.forEach(in: pool, pageSize: pageSize) { hash, bytes in
            if try await target.contains(hash) {
                outcome.present += 1
                return
            }
            var data: [UInt8] = []
            data.reserveCapacity(bytes)
            // A file cut short is as corrupt as one whose bytes changed.
            let complete: Bool
            do {
                try await source.bytes(of: hash, range: 0..<bytes).forEachChunk { data += $0.readableBytesView }
                complete = true
            } catch PhotoStoreError.missing {
                logger.error("photos: a photo's bytes are missing from the source store", metadata: ["hash": "\(hash)"])
                outcome.missing.append(hash)
                return
            } catch PhotoStoreError.io {
                complete = false
            }
            guard complete, PhotoRepository.hash(data) == hash else {
                logger.error("photos: a photo's bytes in the source store do not match their hash; not copied", metadata: ["hash": "\(hash)"])
                outcome.corrupt.append(hash)
                return
            }
            try await target.put(data, hash: hash)
            outcome.copied += 1
        }
        return outcome
    }
}
