package import Foundation
package import NIOCore

/// Where photos' bytes live, named by the SHA-256 of their content (lower-case hex).
///
/// The database says which photos exist and who may see them; a store only keeps bytes.
/// Routes and repositories talk to this interface alone, so a store on an S3-compatible
/// object service can replace the folder (`FolderPhotoStore`) without touching them: `put`
/// is a PUT of the whole object, `bytes(of:range:)` a ranged GET, `remove` a DELETE, and `forEachObject`
/// a paged LIST with each object's last-modified time.
package protocol PhotoStore: Sendable {
    /// Stores `bytes` under `hash`, all or nothing: a reader never sees part of them.
    func put(_ bytes: [UInt8], hash: String) async throws
    func contains(_ hash: String) async throws -> Bool
    /// Opens `range` of the object: a missing object or a store that is away throws here, before
    /// a download's status goes out; the bytes follow through the returned `PhotoBytes`, in
    /// chunks, each once the last is taken.
    func bytes(of hash: String, range: Range<Int>) async throws -> PhotoBytes
    /// Removes the object; one that is already gone is not an error.
    func remove(_ hash: String) async throws
    /// The objects last written before `date`, in pages, and the store's stray partial
    /// writes of that age removed on the way.
    func forEachObject(writtenBefore date: Date, page: ([String]) async throws -> Void) async throws
}

/// An opened object's bytes, handed over a chunk at a time, each once the last is taken.
package struct PhotoBytes: Sendable {
    let forEach: @Sendable (_ body: (ByteBuffer) async throws -> Void) async throws -> Void

    package init(_ forEach: @escaping @Sendable (_ body: (ByteBuffer) async throws -> Void) async throws -> Void) {
        self.forEach = forEach
    }

    package func forEachChunk(_ body: (ByteBuffer) async throws -> Void) async throws {
        try await forEach(body)
    }
}

package enum PhotoStoreError: Error, Equatable {
    case missing(String)
    case io(String)
    /// The store did not answer, or refused (an object store down, slow, 5xx or 403): the
    /// request may succeed later, and is answered 503.
    case unavailable(String)
}

extension PhotoStore {
    /// Hands `range` of the object to `body` in chunks, waiting for each to be taken.
    package func read(_ hash: String, range: Range<Int>, body: (ByteBuffer) async throws -> Void) async throws {
        guard !range.isEmpty else { return }
        try await bytes(of: hash, range: range).forEachChunk(body)
    }

    /// The CRC-32 of the object's first `size` bytes, read once: for a photo stored before
    /// checksums were kept (migration 0017). A missing object throws `missing`.
    package func checksum(of hash: String, size: Int) async throws -> UInt32 {
        var crc = CRC32()
        try await bytes(of: hash, range: 0..<size).forEachChunk { crc.update($0) }
        return crc.value
    }

    /// Whether `text` can name an object: what `PhotoHash.of` writes, nothing else.
    package static func isHash(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

extension PhotoStoreError {
    /// Runs `body`, turning a store that is away into the domain's refusal (503 with
    /// Retry-After), so that no request fails as an internal error for it.
    package static func translating<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch PhotoStoreError.unavailable {
            throw DomainError(.serviceUnavailable, "the photo store is unavailable; try again shortly", retryAfterSeconds: 5)
        }
    }
}
