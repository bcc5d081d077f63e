import Crypto
import DiaryModels
import Foundation
import HTTPTypes
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// `POST /v1/photos` and the signed URLs that serve what it stored, against a real database.
@Suite("Photo uploads and signed URLs")
struct PhotoUploadTests {
    static func uploaded(_ reply: APIHarness.Reply) throws -> Photo {
        guard reply.status == .created else { throw HarnessError("upload answered \(reply.status): \(reply.text)") }
        return try reply.decode()
    }

    @Test("a JPEG's GPS, XMP, maker note, IPTC and comment are gone from the served bytes; its orientation stays", arguments: PhotoStoreKind.allCases)
    func privacy(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let alice = try await api.signIn("Alice")
            let original = TestImages.jpeg(width: 40, height: 24, orientation: 6, gps: true, xmp: true, makerNote: true, iptc: true, comment: true)
            #expect(TestImages.contains(original, "MAKERNOTE-SECRET"), "the fixture carries what must go")
            let photo = try Self.uploaded(try await api.upload(original, token: alice.accessToken))
            #expect(photo.contentType == "image/jpeg")
            #expect(photo.width == 40 && photo.height == 24)
            #expect(photo.urlExpiresAt.timeIntervalSinceNow > 3590 && photo.urlExpiresAt.timeIntervalSinceNow <= 3600)

            let served = try await api.fetch(photo.url)
            #expect(served.status == .ok)
            #expect(served.headers[.contentType] == "image/jpeg")
            let bytes = [UInt8](served.body)
            #expect(bytes.count == photo.bytes)
            for secret in ["MAKERNOTE-SECRET", "XMP-SECRET", "GPSLatitude", "IPTC-SECRET", "COMMENT-SECRET", "TestCam", "Phone 1", "Photoshop"] {
                #expect(!TestImages.contains(bytes, secret), "\(secret) was served")
            }
            #expect(TestImages.exifTags(inJPEG: bytes) == [0x0112: 6], "only the orientation is left in EXIF")
            #expect(!TestImages.jpegSegments(bytes).contains { $0.marker == 0xED || $0.marker == 0xFE })
            // The stored file is the served one: the original is kept nowhere.
            var stored: [UInt8] = []
            try await api.store.read(Self.hash(bytes), range: 0..<bytes.count) { stored += $0.readableBytesView }
            #expect(stored == bytes)
        }
    }

    @Test("PNG and WebP lose their text and EXIF chunks")
    func pngAndWebP() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let png = try Self.uploaded(try await api.upload(TestImages.png(width: 5, height: 7, text: true, exif: true, time: true), type: "image/png", token: alice.accessToken))
            #expect(png.width == 5 && png.height == 7)
            let pngChunks = TestImages.pngChunkTypes([UInt8](try await api.fetch(png.url).body))
            #expect(pngChunks.first == "IHDR" && pngChunks.last == "IEND")
            #expect(Set(pngChunks).isDisjoint(with: ["tEXt", "zTXt", "iTXt", "eXIf", "tIME"]))

            let webp = try Self.uploaded(try await api.upload(TestImages.webp(width: 9, height: 3, exif: true, xmp: true), type: "image/webp", token: alice.accessToken))
            #expect(webp.width == 9 && webp.height == 3)
            let webpChunks = TestImages.webpChunkTypes([UInt8](try await api.fetch(webp.url).body))
            #expect(webpChunks.contains("VP8L"))
            #expect(!webpChunks.contains("EXIF") && !webpChunks.contains("XMP "))
        }
    }

    @Test("the magic bytes decide the type: 415 for a PNG labelled JPEG, HEIC, or an unknown type; 422 for a broken header")
    func typesAndHeaders() async throws {
        try await APIHarness.run { api in
            let token = try await api.signIn("Alice").accessToken
            let pngAsJPEG = try await api.upload(TestImages.png(), type: "image/jpeg", token: token)
            #expect(pngAsJPEG.status == .unsupportedMediaType && pngAsJPEG.code == "unsupported_media_type")
            #expect(try await api.upload(TestImages.heic(), type: "image/jpeg", token: token).code == "unsupported_media_type")
            #expect(try await api.upload(TestImages.heic(), type: "image/heic", token: token).status == .unsupportedMediaType)
            #expect(try await api.upload(TestImages.jpeg(), type: "application/octet-stream", token: token).status == .unsupportedMediaType)
            #expect(try await api.upload(TestImages.jpeg(), type: "image/JPEG; charset=binary", token: token).status == .created)

            let jpeg = TestImages.jpeg()
            let sof = try #require(jpeg.indices.first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
            let truncated = try await api.upload(Array(jpeg[..<(sof + 6)]), token: token)
            #expect(truncated.status == .unprocessableContent && truncated.code == "invalid_image")
            let png = TestImages.png()
            #expect(try await api.upload(Array(png[..<20]), type: "image/png", token: token).code == "invalid_image")
            let wide = try await api.upload(TestImages.jpeg(width: 12_001, height: 8), token: token)
            #expect(wide.status == .unprocessableContent && wide.code == "invalid_image")
            #expect(try await api.upload(TestImages.jpeg(width: 12_000, height: 8), token: token).status == .created)
            #expect(try await api.upload([], token: token).status == .unprocessableContent)
            // Nothing refused was stored.
            let rows = try await api.asSuperuser("select count(*) from photo_uploads").first!.decode("count", as: Int.self)
            #expect(rows == 2)
        }
    }

    @Test("10 MiB at most: refused from Content-Length before the body is read, and by counting without one")
    func sizeLimit() async throws {
        try await APIHarness.run(testing: .live) { api in
            let token = try await api.signIn("Alice").accessToken
            // A real socket that announces 20 MiB and sends none of it: the answer comes anyway.
            let head = "POST /v1/photos HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: image/jpeg\r\nContent-Length: \(20 * 1024 * 1024)\r\n\r\n"
            let answer = try await RawHTTP.exchange(port: try #require(api.client.port), sending: Array(head.utf8))
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
            #expect(answer.contains("payload_too_large"))

            var oversized = TestImages.jpeg()
            oversized += [UInt8](repeating: 0, count: 10 * 1024 * 1024 + 1 - oversized.count)
            let counted = try await api.upload(oversized, token: token, contentLength: nil)
            #expect(counted.status == .contentTooLarge && counted.code == "payload_too_large")
            // A JSON route keeps its 64 KiB limit.
            let json = try await api.call(.patch, "/v1/me", token: token, json: "{\"displayName\":\"" + String(repeating: "a", count: 70_000) + "\"}")
            #expect(json.status == .contentTooLarge)
            var atLimit = TestImages.jpeg()
            atLimit += [UInt8](repeating: 0, count: 10 * 1024 * 1024 - atLimit.count)
            #expect(try await api.upload(atLimit, token: token, contentLength: nil).status == .created, "10 MiB exactly is allowed")
        }
    }

    @Test("200 uploads a day, then 429 rate_limited; the refused bytes are not kept")
    func dailyLimit() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            #expect(try await api.upload(TestImages.jpeg(), token: alice.accessToken).status == .created)
            try await api.asSuperuser("update photo_upload_days set uploads = 200")
            let refused = try await api.upload(TestImages.png(width: 3, height: 3), type: "image/png", token: alice.accessToken)
            #expect(refused.status == .tooManyRequests && refused.code == "rate_limited")
            #expect(try await api.asSuperuser("select count(*) from photo_uploads").first!.decode("count", as: Int.self) == 1)
            let queued = try await api.asSuperuser("select count(*) from photo_garbage").first!.decode("count", as: Int.self)
            #expect(queued == 1, "the refused upload's file is queued for removal")
            // Another user has a day of their own.
            #expect(try await api.upload(TestImages.jpeg(), token: try await api.signIn("Bob").accessToken).status == .created)
        }
    }

    @Test("signed URLs: expired is url_expired; a changed id, exp or sig, or a deleted photo, is the same forbidden")
    func signedURLs() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let photo = try Self.uploaded(try await api.upload(TestImages.jpeg(), token: alice.accessToken))
            let other = try Self.uploaded(try await api.upload(TestImages.png(), type: "image/png", token: alice.accessToken))
            #expect(try await api.fetch(photo.url).status == .ok)

            let key = try SecretKeyFile.photoURLs.load(path: nil, dataDirectory: api.dataDirectory, production: false)
            let past = PhotoLinks(key: key, now: { Date().addingTimeInterval(-3601) })
            let expired = try await api.fetch(past.photo(id: photo.id, hash: "", contentType: "", bytes: 0, width: 0, height: 0).url)
            #expect(expired.status == .forbidden && expired.code == "url_expired")

            let query = try #require(URLComponents(string: photo.url)?.queryItems)
            let exp = try #require(query.first { $0.name == "exp" }?.value)
            let sig = try #require(query.first { $0.name == "sig" }?.value)
            let flipped = String(sig.prefix(10)) + (sig.dropFirst(10).first == "A" ? "B" : "A") + String(sig.dropFirst(11))
            let forged = [
                "/v1/photos/\(other.id)?exp=\(exp)&sig=\(sig)",
                "/v1/photos/\(photo.id)?exp=\(Int(exp)! + 3600)&sig=\(sig)",
                "/v1/photos/\(photo.id)?exp=\(exp)&sig=\(flipped)",
                "/v1/photos/\(photo.id)?exp=\(exp)",
                "/v1/photos/\(photo.id)",
                "/v1/photos/not-a-uuid?exp=\(exp)&sig=\(sig)",
                "/v1/photos/\(photo.id)?exp=0\(exp)&sig=\(sig)",
            ]
            var refusals: Set<String> = []
            for url in forged {
                let reply = try await api.fetch(url)
                #expect(reply.status == .forbidden, "\(url)")
                refusals.insert(reply.text)
            }
            // A signature minted with another key is as good as none.
            let stranger = PhotoLinks(key: SymmetricKey(size: .bits256)).photo(id: photo.id, hash: "", contentType: "", bytes: 0, width: 0, height: 0)
            refusals.insert(try await api.fetch(stranger.url).text)
            try await api.asSuperuser("select expire_photo_uploads(interval '0')")
            refusals.insert(try await api.fetch(photo.url).text)
            #expect(refusals.count == 1, "every refusal reads the same: \(refusals)")
        }
    }

    @Test("ETag and If-None-Match give 304; a Range gives 206; a range past the end gives 416", arguments: PhotoStoreKind.allCases)
    func caching(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let alice = try await api.signIn("Alice")
            let photo = try Self.uploaded(try await api.upload(TestImages.jpeg(width: 64, height: 64), token: alice.accessToken))
            let full = try await api.fetch(photo.url)
            let etag = try #require(full.headers[.eTag])
            #expect(etag == "\"\(Self.hash([UInt8](full.body)))\"")
            let maxAge = try #require(full.headers[.cacheControl])
            #expect(maxAge.hasPrefix("private, max-age="))
            #expect((Int(maxAge.dropFirst("private, max-age=".count)) ?? 0) > 3500)

            let notModified = try await api.fetch(photo.url, headers: [.ifNoneMatch: "\"other\", \(etag)"])
            #expect(notModified.status == .notModified && notModified.body.isEmpty)
            #expect(try await api.fetch(photo.url, headers: [.ifNoneMatch: "\"other\""]).status == .ok)

            let part = try await api.fetch(photo.url, headers: [.range: "bytes=2-9"])
            #expect(part.status == .partialContent)
            #expect(part.headers[.contentRange] == "bytes 2-9/\(photo.bytes)")
            #expect(part.body == full.body[2...9])
            let tail = try await api.fetch(photo.url, headers: [.range: "bytes=-4"])
            #expect(tail.body == full.body.suffix(4))
            let beyond = try await api.fetch(photo.url, headers: [.range: "bytes=\(photo.bytes)-"])
            #expect(beyond.status == .rangeNotSatisfiable && beyond.headers[.contentRange] == "bytes */\(photo.bytes)")
        }
    }

    @Test("a photo whose bytes the store lacks answers as a deleted photo does, never a 200 cut short", arguments: PhotoStoreKind.allCases)
    func missingBytes(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let alice = try await api.signIn("Alice")
            let bytes = TestImages.jpeg(width: 48, height: 32)
            let photo = try Self.uploaded(try await api.upload(bytes, token: alice.accessToken))
            #expect(try await api.fetch(photo.url).status == .ok)
            // As on a second server with a folder of its own, or after an object was lost.
            let served = [UInt8](try await api.fetch(photo.url).body)
            try await api.store.remove(Self.hash(served))
            let missing = try await api.fetch(photo.url)
            #expect(missing.status == .forbidden && missing.code == "forbidden", "\(missing.status) \(missing.text)")
        }
    }

    static func hash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
