import Crypto
package import DiaryModels
package import Foundation
import NIOPosix
import PostgresClient

/// Uploads, as the caller (see `RequestScope`). Attaching is the entries' business
/// (`EntryRepository`, through `set_entry_photos`).
package struct PhotoRepository: Sendable {
    package static let dailyUploadLimit = 200
    /// Uploads never attached are deleted after this (the sweeper's `expire_photo_uploads`).
    package static let unattachedLifetime: Duration = .seconds(24 * 3600)

    let scope: RequestScope
    let store: any PhotoStore

    package init(scope: RequestScope, store: any PhotoStore) {
        self.scope = scope
        self.store = store
    }

    /// Checks and strips the image (`ImageSanitizer`), stores what is left, then records
    /// the upload under the hash's lock. A collector may have removed a file of the same
    /// bytes between the two (its last row went meanwhile); once the row is committed none
    /// can, so the file is checked once more.
    package func upload(_ bytes: [UInt8], declaredAs declared: PhotoContentType) async throws -> Photo {
        // Parsing and hashing 10 MiB take milliseconds of CPU: not on an event loop.
        // The CRC-32 too, for exports (a stored ZIP entry declares it before its bytes).
        let (image, hash, checksum) = try await NIOThreadPool.singleton.runIfActive {
            let image = try Self.sanitize(bytes, declaredAs: declared)
            return (image, Self.hash(image.bytes), CRC32.checksum(image.bytes))
        }
        let id = UUID()
        try await PhotoStoreError.translating { try await store.put(image.bytes, hash: hash) }
        let recorded = try await scope.run("""
            select record_photo_upload(\(id), \(hash), \(image.contentType.rawValue), \(image.bytes.count)::integer,
                \(image.width)::integer, \(image.height)::integer, \(Self.dailyUploadLimit)::integer, \(Int64(checksum))::bigint) as recorded
            """)
        guard try recorded.first?.decode("recorded", as: Bool.self) == true else {
            throw DomainError(.rateLimited, "at most \(Self.dailyUploadLimit) photos a day; try again tomorrow (UTC)")
        }
        try await PhotoStoreError.translating {
            if try await !store.contains(hash) {
                try await store.put(image.bytes, hash: hash)
            }
        }
        return scope.photoLinks.photo(id: id, hash: hash, contentType: image.contentType.rawValue, bytes: image.bytes.count, width: image.width, height: image.height)
    }

    static func sanitize(_ bytes: [UInt8], declaredAs declared: PhotoContentType) throws -> SanitizedImage {
        do {
            return try ImageSanitizer.sanitize(bytes, declaredAs: declared)
        } catch .notDeclaredType {
            throw DomainError(.unsupportedMediaType, "the body is not a \(declared.rawValue) image")
        } catch .unreadable(let why) {
            throw DomainError(.invalidImage, "the image's header cannot be read: \(why)")
        } catch .tooLarge(let width, let height) {
            throw DomainError(.invalidImage, "\(width)×\(height) px is larger than \(ImageSanitizer.maximumSide) px on a side")
        }
    }

    /// Lower-case hex SHA-256: the store's name for the bytes, and their ETag.
    package static func hash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
