import Crypto
import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// A diary's export, opened with the real tools: unzip, Python's zipfile, and a browser.
@Suite("Diary export")
struct DiaryExportTests {
    /// An export written to a temp folder and unpacked there with `unzip`.
    struct Unpacked {
        var zip: URL
        var folder: URL

        func data(_ path: String) throws -> Data { try Data(contentsOf: folder.appendingPathComponent(path)) }

        func decode<T: Decodable>(_ type: T.Type, _ path: String) throws -> T {
            try PostgresJSONCoding.decoder.decode(type, from: data(path))
        }
    }

    /// Unpacks the export with Info-ZIP, then has every other reader (`ZipReaders`) read the
    /// very same files from it.
    static func unpack(_ reply: APIHarness.Reply) async throws -> Unpacked {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("diary-export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let zip = folder.appendingPathComponent("export.zip")
        try reply.body.write(to: zip)
        let unpacked = folder.appendingPathComponent("unpacked")
        let extract = try await Spawn.run("/usr/bin/unzip", ["-q", zip.path, "-d", unpacked.path])
        #expect(extract.status == 0, "unzip: \(extract.output)")
        try await ZipReaders.expectEveryReaderReads(zip, expected: ZipReaders.listing(try ZipReaders.files(in: unpacked)))
        return Unpacked(zip: zip, folder: unpacked)
    }

    static func export(_ api: APIHarness, _ diary: UUID, token: String) async throws -> APIHarness.Reply {
        try await api.call(.get, "/v1/diaries/\(diary)/export", token: token)
    }

    @Test("a member's export: every entry as the API shows it, photos matching their hashes, a book, a README", arguments: PhotoStoreKind.allCases)
    func completeExport(store: PhotoStoreKind) async throws {
        // The server's statement timeout, as `serve` sets it: it travels with each transaction.
        try await APIHarness.run(statementTimeout: .seconds(5), photoStore: store) { api in
            let couple = try await EntryPhotoTests.couple(api)
            try await EntryPhotoTests.makePremium(api, couple.alice)
            let first = try await EntryPhotoTests.upload(api, couple.alice, width: 24)
            let second = try await EntryPhotoTests.upload(api, couple.alice, width: 32)
            let withPhotos = try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                                body: CreateEntryRequest(content: "写真の日\n二行目", question: "今日の空は？", photoIds: [first.id, second.id]))
            #expect(withPhotos.status == .created)
            for text in ["おはよう", "<b>escaped</b> & fine"] {
                #expect(try await api.post(text, in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            }
            let photoEntry = try withPhotos.decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries/\(photoEntry.id)/read", token: couple.bob.accessToken).status == .noContent)

            let reply = try await Self.export(api, couple.diary.id, token: couple.bob.accessToken)
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType] == "application/zip")
            let disposition = reply.headers[.contentDisposition] ?? ""
            #expect(disposition.hasPrefix(#"attachment; filename="diary-"#), "\(disposition)")
            #expect(disposition.contains("filename*=UTF-8''%E3%81%B5%E3%81%9F%E3%82%8A-"), "the diary's own name, percent-encoded: \(disposition)")

            let unpacked = try await Self.unpack(reply)
            let names = try FileManager.default.contentsOfDirectory(atPath: unpacked.folder.path).sorted()
            #expect(names == ["README.txt", "diary.json", "entries.json", "index.html", "photos"])

            let diary = try unpacked.decode(ExportedDiary.self, "diary.json")
            #expect(diary.diary.id == couple.diary.id && diary.diary.members.count == 2 && diary.entryCount == 3)

            let exported = try unpacked.decode([ExportedEntry].self, "entries.json")
            let page = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries?limit=100", token: couple.bob.accessToken).decode(EntryPage.self)
            let fromAPI = page.entries.reversed().map { $0 }
            #expect(exported.map(\.id) == fromAPI.map(\.id), "oldest first, all of them")
            for (file, api) in zip(exported, fromAPI) {
                #expect(file.author == api.author && file.content == api.content && file.question == api.question)
                #expect(file.readBy == api.readBy && file.createdAt == api.createdAt && file.updatedAt == api.updatedAt)
                #expect(file.photos == api.photos.map { "photos/\($0.id.canonicalText).jpg" })
            }

            for photo in [first, second] {
                let row = try #require(try await api.asSuperuser("select content_hash, content_crc32 from entry_photos where id = \(photo.id)").first)
                let bytes = try unpacked.data("photos/\(photo.id.canonicalText).jpg")
                #expect(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() == (try row.decode("content_hash", as: String.self)))
                // Kept since the upload, so the export read the photo once.
                #expect(try row.decode("content_crc32", as: Int64?.self) == Int64(CRC32.checksum(bytes)))
            }

            let html = String(decoding: try unpacked.data("index.html"), as: UTF8.self)
            #expect(html.contains(#"lang="ja""#) && html.contains("写真の日") && html.contains("&lt;b&gt;escaped&lt;/b&gt; &amp; fine"))
            #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))
            let readme = String(decoding: try unpacked.data("README.txt"), as: UTF8.self)
            #expect(readme.contains("entries.json") && readme.contains("index.html"))
        }
    }

    @Test("an empty diary's export, and one whose photo predates kept checksums, open in every reader; the backfill gives it one",
          arguments: PhotoStoreKind.allCases)
    func emptyAndOlderPhotos(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let couple = try await EntryPhotoTests.couple(api)
            let empty = try await Self.unpack(try await Self.export(api, couple.diary.id, token: couple.alice.accessToken))
            #expect(try empty.decode([ExportedEntry].self, "entries.json").isEmpty)

            let photo = try await EntryPhotoTests.upload(api, couple.alice, width: 24)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                       body: CreateEntryRequest(content: "昔の写真", photoIds: [photo.id])).status == .created)
            try await api.asSuperuser("update entry_photos set content_crc32 = null where id = \(photo.id)")
            let unpacked = try await Self.unpack(try await Self.export(api, couple.diary.id, token: couple.alice.accessToken))
            let bytes = try unpacked.data("photos/\(photo.id.canonicalText).jpg")

            let outcome = try await TestDatabase.withPool(api.database.as(TestDatabase.ownerRole), size: 1) { pool in
                try await PhotoChecksumBackfill(pool: pool, store: api.store, logger: TestDatabase.logger).run(pageSize: 1)
            }
            #expect(outcome.filled == 1 && outcome.missing.isEmpty)
            let kept = try await api.asSuperuser("select content_crc32 from entry_photos where id = \(photo.id)").first?.decode("content_crc32", as: Int64?.self)
            #expect(kept == Int64(CRC32.checksum(bytes)))
        }
    }

    @Test("a real browser renders the book offline: every entry's text in the DOM, every photo loaded, a screenshot")
    func browserRendersBook() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let photo = try await EntryPhotoTests.upload(api, couple.alice, width: 40)
            let texts = ["きょうは雨。傘を忘れた。", "明日は晴れるといいね", "Third entry, in English"]
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                       body: CreateEntryRequest(content: texts[0], photoIds: [photo.id])).status == .created)
            for text in texts.dropFirst() { #expect(try await api.post(text, in: couple.diary.id, token: couple.bob.accessToken).status == .created) }
            let unpacked = try await Self.unpack(try await Self.export(api, couple.diary.id, token: couple.alice.accessToken))
            let output = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/test-output/export-book.png")
            try FileManager.default.createDirectory(at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
            let rendered = try await HeadlessChromium.render(indexHTML: unpacked.folder.appendingPathComponent("index.html"), screenshot: output)
            for text in texts { #expect(rendered.dom.contains(text), "\(text) is rendered") }
            #expect(rendered.images.count == 1 && rendered.unloadedImages.isEmpty, "\(rendered.images)")
            #expect(((try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? 0) > 0)
        }
    }

    @Test("a non-member gets 404 and no archive; past the day's limit an export is 429, per user")
    func refusals() async throws {
        try await APIHarness.run(export: ExportConfiguration(exportsPerDay: 2)) { api in
            let couple = try await EntryPhotoTests.couple(api)
            let stranger = try await api.signIn("Mallory")
            let refused = try await Self.export(api, couple.diary.id, token: stranger.accessToken)
            #expect(refused.status == .notFound && refused.code == "not_found")
            #expect(try await Self.export(api, UUID(), token: couple.alice.accessToken).status == .notFound)
            for _ in 0..<2 { #expect(try await Self.export(api, couple.diary.id, token: couple.alice.accessToken).status == .ok) }
            let third = try await Self.export(api, couple.diary.id, token: couple.alice.accessToken)
            #expect(third.status == .tooManyRequests && third.code == "rate_limited")
            #expect(try await Self.export(api, couple.diary.id, token: couple.bob.accessToken).status == .ok, "the limit is per user")
        }
    }

    @Test("an anonymous diary's export shows aliases exactly as the API does, never the real ids")
    func anonymousAliases() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let bob = try await api.signIn("Bob")
            let diary = try await api.createDiary("ひみつ", type: .anonymous, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            #expect(try await api.post("だれでしょう", in: diary.id, token: alice.accessToken).status == .created)
            let unpacked = try await Self.unpack(try await Self.export(api, diary.id, token: bob.accessToken))
            let entries = try unpacked.decode([ExportedEntry].self, "entries.json")
            let fromAPI = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: bob.accessToken).decode(EntryPage.self).entries
            #expect(entries.map(\.author) == fromAPI.map(\.author))
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)", token: bob.accessToken).decode(Diary.self).members
            #expect(try unpacked.decode(ExportedDiary.self, "diary.json").diary.members == members)
            // The requester sees themselves as themselves, as in the API; the other member only by alias.
            let everything = try ["diary.json", "entries.json", "index.html"].map { String(decoding: try unpacked.data($0), as: UTF8.self) }.joined()
            #expect(!everything.lowercased().contains(alice.user.id.canonicalText), "Alice's real id appears in the export")
            #expect(!everything.contains("Alice"))
        }
    }

    @Test("a writer during an export neither waits for it nor tears it: an entry is in every file or in none")
    func snapshotUnderConcurrentWrites() async throws {
        try await APIHarness.run(poolSize: 6) { api in
            let couple = try await EntryPhotoTests.couple(api)
            try await api.asSuperuser("""
                select post_entry_as(\(couple.alice.user.id), \(couple.diary.id), gen_random_uuid(), 'seed ' || n,
                    created_at => now() - interval '1 day' + n * interval '1 second')
                from generate_series(1, 600) n
                """)
            let writer = Task {
                var written = 0
                let clock = ContinuousClock()
                var slowest = Duration.zero
                for index in 0..<40 {
                    let started = clock.now
                    let reply = try await api.post("during \(index)", in: couple.diary.id, token: couple.bob.accessToken)
                    slowest = max(slowest, clock.now - started)
                    if reply.status == .created { written += 1 }
                }
                return (written, slowest)
            }
            let reply = try await Self.export(api, couple.diary.id, token: couple.alice.accessToken)
            let (written, slowest) = try await writer.value
            #expect(written == 40)
            #expect(slowest < .seconds(5), "a write waited \(slowest) for the export")
            let unpacked = try await Self.unpack(reply)
            let entries = try unpacked.decode([ExportedEntry].self, "entries.json")
            let diary = try unpacked.decode(ExportedDiary.self, "diary.json")
            let html = String(decoding: try unpacked.data("index.html"), as: UTF8.self)
            #expect(entries.count == diary.entryCount, "entries.json and diary.json agree")
            let during = entries.filter { $0.content.hasPrefix("during ") }
            for index in 0..<40 {
                let inJSON = during.contains { $0.content == "during \(index)" }
                #expect(inJSON == html.contains(">during \(index)<"), "entry \(index) is in both files or neither")
            }
        }
    }
}
