import AsyncHTTPClient
package import Foundation
package import Logging
import Metrics
import PostgresClient
package import NIOCore
package import S3Client

/// The `PhotoStore` on an S3-compatible bucket (`PHOTO_STORE=s3`): objects named
/// `<S3_PREFIX>ab/abcdef…` by hash, as the folder names its files, so that several servers
/// share one store. A PUT is whole or nothing on every S3-compatible service.
///
/// Failures are the store's to say: a missing object is `PhotoStoreError.missing` (answered
/// as a deleted photo), anything else `unavailable` (answered 503). Every operation is logged
/// when it fails and counted by result, with its latency.
package struct S3PhotoStore: PhotoStore {
    package let client: S3Client
    /// Prepended to every object's key: several deployments may share a bucket.
    package let prefix: String
    let logger: Logger

    package init(client: S3Client, prefix: String = "", logger: Logger) {
        self.client = client
        self.prefix = prefix
        self.logger = logger
    }

    package func key(of hash: String) -> String {
        "\(prefix)\(hash.prefix(2))/\(hash)"
    }

    package func put(_ bytes: [UInt8], hash: String) async throws {
        precondition(Self.isHash(hash), "not a content hash")
        // Stored with its type, so that a presigned GET or a CDN in front of the bucket answers with it.
        let contentType = ImageSanitizer.sniff(bytes.prefix(16))?.rawValue ?? "application/octet-stream"
        try await measured("put", hash) { try await client.put(key(of: hash), bytes: bytes, contentType: contentType) }
    }

    package func contains(_ hash: String) async throws -> Bool {
        try await measured("head", hash) { try await client.head(key(of: hash)) != nil }
    }

    /// The GET's answer is in before this returns, so a missing object or a refusal throws
    /// here; its bytes then come a chunk at a time, as the connection brings them, the next
    /// only once the last is taken, so that a slow reader holds little memory.
    package func bytes(of hash: String, range: Range<Int>) async throws -> PhotoBytes {
        let chunks = try await measured("get", hash) { try await client.get(key(of: hash), range: range) }
        return PhotoBytes { [self] body in
            var received = 0
            var iterator = chunks.makeAsyncIterator()
            while true {
                // Only the bucket's own failures are the store's; the reader's errors are its own.
                let next: ByteBuffer?
                do {
                    next = try await iterator.next()
                } catch {
                    throw failure("get", hash, S3Error.unreachable(operation: "GET", key: key(of: hash), reason: "the body broke off: \(error)"))
                }
                guard let chunk = next else { break }
                received += chunk.readableBytes
                try await body(chunk)
            }
            guard received == range.count else {
                throw failure("get", hash, S3Error.unreachable(operation: "GET", key: key(of: hash), reason: "\(received) of \(range.count) bytes"))
            }
        }
    }

    /// A URL that GETs the object straight from the bucket until `lifetime` seconds after
    /// `date`, answered as `contentType` (`PHOTO_URLS=presigned`).
    package func presignedURL(of hash: String, contentType: String, lifetime: Int, date: Date) -> String {
        client.presignedGET(key(of: hash), expires: lifetime, date: date, responseContentType: contentType)
    }

    package func remove(_ hash: String) async throws {
        try await measured("delete", hash) { try await client.delete(key(of: hash)) }
    }

    package func forEachObject(writtenBefore date: Date, page: ([String]) async throws -> Void) async throws {
        var continuation: String?
        repeat {
            let (objects, next) = try await measured("list", prefix) { try await client.list(prefix: prefix, continuation: continuation) }
            let hashes = objects.filter { $0.lastModified < date }.compactMap { object -> String? in
                let name = object.key.dropFirst(prefix.count).split(separator: "/").last.map(String.init) ?? ""
                return Self.isHash(name) && object.key == key(of: name) ? name : nil
            }
            if !hashes.isEmpty { try await page(hashes) }
            continuation = next
        } while continuation != nil
    }

    private func measured<Result>(_ operation: String, _ subject: String, _ body: () async throws -> Result) async throws -> Result {
        let started = ContinuousClock.now
        do {
            let result = try await body()
            Self.record(operation, "ok", since: started)
            return result
        } catch let error as S3Error {
            if case .notFound = error {
                Self.record(operation, "missing", since: started)
                throw PhotoStoreError.missing(subject)
            }
            Self.record(operation, "failed", since: started)
            throw failure(operation, subject, error)
        }
    }

    private func failure(_ operation: String, _ subject: String, _ error: S3Error) -> PhotoStoreError {
        logger.error("photo store: \(operation) failed", metadata: ["subject": "\(subject)", "error": "\(error)"])
        return .unavailable("\(error)")
    }

    private static func record(_ operation: String, _ result: String, since started: ContinuousClock.Instant) {
        Counter(label: "photo_store_operations_total", dimensions: [("store", "s3"), ("operation", operation), ("result", result)]).increment()
        Metrics.Timer(label: "photo_store_operation_duration_seconds", dimensions: [("store", "s3"), ("operation", operation)])
            .recordNanoseconds((ContinuousClock.now - started).nanoseconds)
    }
}

