import AsyncHTTPClient
import DiaryModels
import Foundation
import Testing
import TestSupport
@testable import DiaryCore

/// `PHOTO_URLS=presigned`: photos' URLs are the bucket's presigned GETs (moto's open instance,
/// which answers them), so no byte passes through the server; their signing is proven against
/// AWS's published examples in S3ClientTests.
@Suite("Photos served by presigned URL")
struct PresignedPhotoTests {
    @Test("an upload's and an entry's photo URLs are the bucket's, valid for an hour, and GET the photo's bytes as its type")
    func presignedURLs() async throws {
        try await APIHarness.run(photoStore: .s3Presigned) { api in
            let couple = try await EntryPhotoTests.couple(api)
            let uploadedAt = Date()
            let photo = try await EntryPhotoTests.upload(api, couple.alice, width: 24)
            let hash = try await EntryPhotoTests.hash(api, of: photo)
            let store = try #require(api.store as? S3PhotoStore)
            let bucket = try TestBucket.openConfiguration()
            let objectURL = "\(bucket.endpoint.absoluteString)/\(bucket.bucket)/\(store.key(of: hash))?"
            #expect(photo.url.hasPrefix(objectURL), "\(photo.url)")
            #expect(photo.url.contains("X-Amz-Expires=3600") && photo.url.contains("X-Amz-Signature="))
            #expect(photo.url.contains("response-content-type=image%2Fjpeg"))
            #expect(abs(photo.urlExpiresAt.timeIntervalSince(uploadedAt) - 3600) < 60)

            let posted = try await EntryPhotoTests.post(api, couple, photos: [photo.id])
            #expect(posted.status == .created, "\(posted.status) \(posted.text)")
            let entry = try posted.decode(Entry.self)
            // The partner reads the diary: their URL is the bucket's too.
            let read = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: couple.bob.accessToken)
            #expect(read.status == .ok, "\(read.status) \(read.text)")
            let seen = try #require(try read.decode(Entry.self).photos.first)
            #expect(seen.url.hasPrefix(objectURL) && entry.images == entry.photos.map(\.url))

            for url in [photo.url, seen.url] {
                let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 20)
                #expect(response.status == .ok && response.headers.first(name: "content-type") == "image/jpeg")
                #expect(PhotoRepository.hash(Array(buffer: body)) == hash)
            }
        }
    }

    @Test("PHOTO_URLS=server mints the API's own signed URLs on the same bucket")
    func serverURLs() async throws {
        try await APIHarness.run(photoStore: .s3) { api in
            let alice = try await api.signIn("Alice")
            let photo = try await EntryPhotoTests.upload(api, alice)
            #expect(photo.url.hasPrefix("/v1/photos/\(photo.id.uuidString.lowercased())?exp="), "\(photo.url)")
        }
    }
}
