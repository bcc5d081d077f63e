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
        let kept = try await keep(bytes, declaredAs: declared, thenRead: []) { id, hash, image, checksum in
            ["""
            select record_photo_upload(\(id), \(hash), \(image.contentType.rawValue), \(image.bytes.count)::integer,
                \(image.width)::integer, \(image.height)::integer, \(Self.dailyUploadLimit)::integer, \(Int64(checksum))::bigint) as recorded
            """]
        }
        return scope.photoLinks.photo(
            id: kept.id, hash: kept.hash, contentType: kept.image.contentType.rawValue, bytes: kept.image.bytes.count, width: kept.image.width, height: kept.image.height)
    }

    /// `PUT /v1/me/photo`: the image becomes the caller's profile photo, kept as an upload is
    /// and within the same daily limit; the one it replaces is collected.
    package func setProfilePhoto(_ bytes: [UInt8], declaredAs declared: PhotoContentType) async throws -> Me {
        let kept = try await keep(bytes, declaredAs: declared, thenRead: [UserRepository.readBack]) { id, hash, image, checksum in
            ["""
            select set_profile_photo(\(id), \(hash), \(image.contentType.rawValue), \(image.bytes.count)::integer,
                \(image.width)::integer, \(image.height)::integer, \(Self.dailyUploadLimit)::integer, \(Int64(checksum))::bigint) as recorded
            """]
        }
        guard let row = kept.readBack.first else { throw DomainError.unauthenticated("the account no longer exists") }
        return try UserColumns.me(from: row, links: scope.photoLinks)
    }

    /// `DELETE /v1/me/photo`: the caller has no profile photo any more; its file is collected.
    package func removeProfilePhoto() async throws -> Me {
        let results = try await scope.run(["select remove_profile_photo()"], thenRead: [UserRepository.readBack])
        guard let row = results[1].first else { throw DomainError.unauthenticated("the account no longer exists") }
        return try UserColumns.me(from: row, links: scope.photoLinks)
    }

    private struct Kept {
        var id: UUID
        var hash: String
        var image: SanitizedImage
        var readBack: PostgresRows
    }

    /// The one way a photo's bytes are kept: sanitized and hashed off the event loop, put in
    /// the store, recorded by `record` (whose first statement answers `recorded`, false over
    /// the daily limit), then checked in the store once more.
    private func keep(
        _ bytes: [UInt8], declaredAs declared: PhotoContentType, thenRead readBack: [ReadBack],
        record: (UUID, String, SanitizedImage, UInt32) -> [PostgresQuery]
    ) async throws -> Kept {
        // Parsing and hashing 10 MiB take milliseconds of CPU: not on an event loop.
        // The CRC-32 too, for exports (a stored ZIP entry declares it before its bytes).
        let (image, hash, checksum) = try await NIOThreadPool.singleton.runIfActive {
            let image = try Self.sanitize(bytes, declaredAs: declared)
            return (image, Self.hash(image.bytes), CRC32.checksum(image.bytes))
        }
        let id = UUID()
        try await PhotoStoreError.translating { try await store.put(image.bytes, hash: hash) }
        let recording = record(id, hash, image, checksum)
        let results = try await scope.run(recording, thenRead: readBack)
        guard try results[0].first?.decode("recorded", as: Bool.self) == true else {
            throw DomainError(.rateLimited, "at most \(Self.dailyUploadLimit) photos a day; try again tomorrow (UTC)")
        }
        try await PhotoStoreError.translating {
            if try await !store.contains(hash) {
                try await store.put(image.bytes, hash: hash)
            }
        }
        return Kept(id: id, hash: hash, image: image, readBack: results.count > 1 ? results[1] : results[0])
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
