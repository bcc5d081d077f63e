import DiaryModels
import Foundation
import PostgresClient
import S3Client
import Testing
import TestSupport
@testable import DiaryCore

/// `diary-server photos copy-to-store`: the folder into the bucket (moto), before a switch-over.
@Suite("Photos copied into the bucket")
struct PhotoStoreCopyTests {
    @Test("every photo the database names reaches the bucket, checked by hash; a second run copies nothing; a corrupt file is refused")
    func copyToStore() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let attached = try await EntryPhotoTests.upload(api, couple.alice, width: 24)
            _ = try await EntryPhotoTests.post(api, couple, photos: [attached.id])
            let unattached = try await EntryPhotoTests.upload(api, couple.alice, width: 32)
            let damaged = try await EntryPhotoTests.upload(api, couple.bob, width: 40)
            let hashes = [try await EntryPhotoTests.hash(api, of: attached), try await EntryPhotoTests.hash(api, of: unattached)]
            let damagedHash = try await EntryPhotoTests.hash(api, of: damaged)
            try Data([0xFF, 0xD8, 0xFF]).write(to: URL(fileURLWithPath: try await EntryPhotoTests.file(api, of: damaged)))

            let target = S3PhotoStore(
                client: S3Client(configuration: try TestBucket.configuration(), http: .shared),
                prefix: "tests-\(UUID().uuidString.lowercased())-", logger: TestDatabase.logger)
            try await TestDatabase.withPool(api.database.as(TestDatabase.ownerRole), size: 1) { pool in
                let copy = PhotoStoreCopy(pool: pool, source: api.store, target: target, logger: TestDatabase.logger)
                let first = try await copy.run(pageSize: 2)
                #expect(first == PhotoStoreCopy.Outcome(copied: 2, present: 0, missing: [], corrupt: [damagedHash]))
                for hash in hashes {
                    var copied: [UInt8] = []
                    var original: [UInt8] = []
                    let size = try #require(try await target.client.head(target.key(of: hash)))
                    try await target.read(hash, range: 0..<size) { copied += $0.readableBytesView }
                    try await api.store.read(hash, range: 0..<size) { original += $0.readableBytesView }
                    #expect(copied == original && PhotoRepository.hash(copied) == hash)
                }
                #expect(try await !target.contains(damagedHash))
                let second = try await copy.run()
                #expect(second.copied == 0 && second.present == 2)
            }
        }
    }
}

/// Two servers on one database and one bucket, as behind a load balancer.
@Suite("Two instances, one bucket")
struct TwoInstancePhotoTests {
    @Test("a photo uploaded through one instance is downloadable, attachable and deletable through the other")
    func twoInstances() async throws {
        try await APIHarness.run(photoStore: .s3) { first in
            try await APIHarness.run(on: first.database, photoStore: .s3, sharing: first) { second in
                let couple = try await EntryPhotoTests.couple(first)
                let photo = try await EntryPhotoTests.upload(first, couple.alice)
                let hash = try await EntryPhotoTests.hash(first, of: photo)
                let served = try await second.fetch(photo.url)
                #expect(served.status == .ok && PhotoRepository.hash([UInt8](served.body)) == hash)
                let posted = try await EntryPhotoTests.post(second, couple, photos: [photo.id])
                #expect(posted.status == .created, "\(posted.status) \(posted.text)")
                let entry = try posted.decode(Entry.self)
                #expect(try await first.fetch(try #require(entry.photos.first).url).status == .ok)
                let deleted = try await second.call(.delete, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: couple.alice.accessToken)
                #expect(deleted.status == .noContent)
                try await waitUntil { try await !first.store.contains(hash) }
                #expect(try await first.fetch(photo.url).status == .forbidden)
            }
        }
    }
}
