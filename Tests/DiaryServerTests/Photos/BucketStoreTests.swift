import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore

/// The bucket's own failures and housekeeping, as the folder's are tested in EntryPhotoTests:
/// down (nothing listens), refusing (503 SlowDown), stalling, and cutting an answer off, each
/// on upload and on download (`FaultyProxy`).
@Suite("The bucket: failing, and swept")
struct BucketStoreTests {
    /// A failing bucket as `mode` says: `down` (nothing listens), or a `FaultyProxy` mode.
    static func withFailingBucket(_ mode: String, _ body: (PhotoStoreKind) async throws -> Void) async throws {
        if mode == "down" {
            try await body(.s3Unreachable)
        } else {
            try await FaultyProxy.with(mode) { try await body(.s3At($0)) }
        }
    }

    @Test("a bucket that is down, refuses or stalls: an upload is 503 with Retry-After, and nothing is recorded", arguments: ["down", "refuse", "stall"])
    func uploadWhileFailing(mode: String) async throws {
        try await Self.withFailingBucket(mode) { failing in
            try await APIHarness.run(photoStore: failing) { api in
                let alice = try await api.signIn("Alice")
                let reply = try await api.upload(TestImages.jpeg(width: 16, height: 16), token: alice.accessToken)
                #expect(reply.status == .serviceUnavailable && reply.code == "service_unavailable", "\(reply.status) \(reply.text)")
                #expect(reply.headers[.retryAfter] != nil)
                #expect(try await api.asSuperuser("select count(*)::int8 as n from photo_uploads").first?.decode("n", as: Int.self) == 0)
            }
        }
    }

    @Test("a bucket that is down, refuses or stalls: a download is 503 with Retry-After, never a 200", arguments: ["down", "refuse", "stall"])
    func downloadWhileFailing(mode: String) async throws {
        try await APIHarness.run(photoStore: .s3) { first in
            let alice = try await first.signIn("Alice")
            let photo = try PhotoUploadTests.uploaded(try await first.upload(TestImages.jpeg(width: 20, height: 12), token: alice.accessToken))
            try await Self.withFailingBucket(mode) { failing in
                try await APIHarness.run(on: first.database, photoStore: failing, sharing: first) { second in
                    let reply = try await second.fetch(photo.url)
                    #expect(reply.status == .serviceUnavailable && reply.code == "service_unavailable", "\(reply.status) \(reply.text)")
                    #expect(reply.headers[.retryAfter] != nil)
                }
            }
            #expect(try await first.fetch(photo.url).status == .ok)
        }
    }

    /// A stall mid-body ends at the shared HTTP client's read timeout (30 s).
    @Test("a bucket whose answer breaks off or stalls mid-body: the download's connection closes short of its Content-Length, never a whole 200",
          arguments: ["cut:4608", "stall:4608"])
    func downloadCutOff(mode: String) async throws {
        try await APIHarness.run(photoStore: .s3) { first in
            let alice = try await first.signIn("Alice")
            let photo = try PhotoUploadTests.uploaded(try await first.upload(TestImages.png(width: 128, height: 128), type: "image/png", token: alice.accessToken))
            try #require(photo.bytes > 16 * 1024, "the photo must outlast the cut")
            // The answer's head, and then 4 KiB of the photo's bytes.
            try await FaultyProxy.with(mode) { proxy in
                try await APIHarness.run(on: first.database, testing: .live, photoStore: .s3At(proxy), sharing: first) { second in
                    do {
                        let reply = try await second.fetch(photo.url)
                        #expect(reply.status != .ok, "a 200 of \(reply.body.count) of \(photo.bytes) bytes")
                    } catch {
                        // The client saw the connection close before the body's end: what it must see.
                    }
                }
            }
            #expect(try await first.fetch(photo.url).body.count == photo.bytes)
        }
    }

    /// Fixed: an error thrown by the reader (a client gone mid-download) was wrapped as the
    /// bucket breaking off, logged as a store failure and counted as one.
    @Test("an error of the reader's own, mid-download, reaches the reader as it was, not as the bucket failing")
    func readerErrorIsTheReaders() async throws {
        struct ReaderGone: Error {}
        try await APIHarness.run(photoStore: .s3) { api in
            let bytes = TestImages.png(width: 128, height: 128)
            let hash = PhotoRepository.hash(bytes)
            try await api.store.put(bytes, hash: hash)
            await #expect(throws: ReaderGone.self) {
                try await api.store.bytes(of: hash, range: 0..<bytes.count).forEachChunk { _ in throw ReaderGone() }
            }
        }
    }

    @Test("the sweeper lists the bucket: an object no row names goes once past the grace, a named one stays")
    func sweeper() async throws {
        try await APIHarness.run(photoStore: .s3) { api in
            let alice = try await api.signIn("Alice")
            let kept = try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 16, height: 8), token: alice.accessToken))
            let keptHash = try await EntryPhotoTests.hash(api, of: kept)
            let orphanBytes = TestImages.png(width: 2, height: 2)
            let orphan = PhotoRepository.hash(orphanBytes)
            try await api.store.put(orphanBytes, hash: orphan)
            let sweeper = PhotoSweeper(pool: api.pool, store: api.store, logger: TestDatabase.logger)
            // Within the grace (an hour by default) nothing goes: it may be an upload in progress.
            try await sweeper.sweep()
            #expect(try await api.store.contains(orphan))
            try await sweeper.sweep(at: Date().addingTimeInterval(7200))
            #expect(try await !api.store.contains(orphan))
            #expect(try await api.store.contains(keptHash), "an object a row names stays")
            #expect(try await api.fetch(kept.url).status == .ok)
        }
    }
}
