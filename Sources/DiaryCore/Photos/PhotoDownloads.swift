package import Foundation
package import Logging
import Metrics
package import PostgresClient

/// Serves signed photo URLs: checks the signature, then asks the database whether the
/// photo still exists. No caller is signed in; the signature is the permission.
package struct PhotoDownloads: Sendable {
    let pool: PostgresPool
    package let store: any PhotoStore
    let links: PhotoLinks
    let logger: Logger

    package init(pool: PostgresPool, store: any PhotoStore, links: PhotoLinks, logger: Logger) {
        self.pool = pool
        self.store = store
        self.links = links
        self.logger = logger
    }

    package struct File: Sendable {
        package var hash: String
        package var contentType: String
        package var bytes: Int
        /// Until the URL expires: as long as a cache may keep the answer.
        package var secondsLeft: Int
    }

    /// A tampered URL and one for a deleted photo get the same refusal, so that neither
    /// tells an attacker anything.
    package func file(id: UUID, exp: String?, sig: String?) async throws -> File {
        let secondsLeft: Int
        switch links.verify(id: id, exp: exp, sig: sig) {
        case .forbidden: throw Self.refused
        case .expired: throw DomainError(.urlExpired, "this photo URL has expired; fetch the entry again for a new one")
        case .valid(let left): secondsLeft = left
        }
        let rows = try await pool.query("select content_hash, content_type, bytes from photo_file(\(id))")
        guard let row = rows.first else { throw Self.refused }
        return File(hash: try row.decode("content_hash"), contentType: try row.decode("content_type"), bytes: try row.decode("bytes"), secondsLeft: secondsLeft)
    }

    /// The file's bytes in `range`, opened before the status goes out: a store without them
    /// (another server's folder, a lost object) answers as a deleted photo does, and a store
    /// that is away as unavailable, never with a 200 cut short.
    package func open(_ file: File, range: Range<Int>) async throws -> PhotoBytes {
        do {
            return try await PhotoStoreError.translating { try await store.bytes(of: file.hash, range: range) }
        } catch PhotoStoreError.missing {
            logger.error("photos: a photo's bytes are missing from the store", metadata: ["hash": "\(file.hash)"])
            Counter(label: "photo_missing_total").increment()
            throw Self.refused
        }
    }

    static let refused = DomainError.forbidden("this photo URL is not valid")
}
