import DiaryModels
import Foundation
import HTTPTypes
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer
import PostgresClient

/// `PUT` and `DELETE /v1/me/photo`, and the profile photo URLs the server mints in their place
/// of any URL a user types.
@Suite("Profile photos")
struct ProfilePhotoTests {
    static func setPhoto(_ api: APIHarness, _ bytes: [UInt8], type: String = "image/jpeg", token: String) async throws -> Me {
        let reply = try await api.upload(bytes, type: type, token: token, to: "/v1/me/photo", method: .put)
        guard reply.status == .ok else { throw HarnessError("PUT /v1/me/photo answered \(reply.status): \(reply.text)") }
        return try reply.decode()
    }

    @Test("an uploaded photo, stripped as entry photos are, is minted into me, sign-in, members, diaries, entries' authors and the socket's member frames; one URL for its window; a stranger never gets it")
    func mintedEverywhere() async throws {
        try await APIHarness.run { api in try await Self.mintedEverywhere(api, tag: "") }
    }

    /// Also run on a Citus cluster (CitusClusterTests), with `tag` making its names its own.
    static func mintedEverywhere(_ api: APIHarness, tag: String) async throws {
        do {
            let aiko = try await api.signIn("aiko\(tag)"), ben = try await api.signIn("ben\(tag)"), stranger = try await api.signIn("stranger\(tag)")
            let diary = try await api.createDiary("ふたり", type: .couple, token: aiko.accessToken)
            #expect(try await api.join(diary.inviteCode, token: ben.accessToken).status == .ok)
            let before = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: ben.accessToken).decode(EntryPage.self)
            let cursor = try #require(before.changesCursor)
            #expect(try await api.post("今日は晴れ", in: diary.id, token: aiko.accessToken).status == .created)

            let original = TestImages.jpeg(width: 40, height: 24, orientation: 6, gps: true, makerNote: true)
            let me = try await Self.setPhoto(api, original, token: aiko.accessToken)
            let url = try #require(me.profileImageUrl)
            #expect(url.hasPrefix("/v1/photos/"))
            let served = try await api.fetch(url)
            #expect(served.status == .ok && served.headers[.contentType] == "image/jpeg")
            #expect(!TestImages.contains([UInt8](served.body), "MAKERNOTE-SECRET") && !TestImages.contains([UInt8](served.body), "GPSLatitude"))

            // The same URL wherever it appears, for the caller and a co-member alike.
            #expect(try await api.call(.get, "/v1/me", token: aiko.accessToken).decode(Me.self).profileImageUrl == url)
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: ben.accessToken).decode(MemberList.self).members
            #expect(members.first { $0.userId == aiko.user.id }?.profileImageUrl == url)
            let seen = try await api.call(.get, "/v1/diaries/\(diary.id)", token: ben.accessToken).decode(Diary.self)
            #expect(seen.members.first { $0.userId == aiko.user.id }?.profileImageUrl == url)
            let page = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: ben.accessToken).decode(EntryPage.self)
            #expect(page.entries.first?.author.profileImageUrl == url)
            let changes = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(cursor)", token: ben.accessToken).text
            let photoID = try #require(url.split(separator: "?").first?.split(separator: "/").last)
            #expect(changes.contains(String(photoID)), "delta sync's entry.created carries the author's photo")
            // Nobody outside the diary reads Aiko at all.
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: stranger.accessToken).status == .notFound)

            // PATCH takes no URL, whatever it is.
            let patched = try await api.call(.patch, "/v1/me", token: ben.accessToken, json: #"{"profileImageUrl":"https://tracker.example/p.gif"}"#)
            #expect(patched.status == .badRequest && patched.code == "validation_failed" && patched.text.contains("PUT /v1/me/photo"))
            #expect(try await api.call(.patch, "/v1/me", token: ben.accessToken, json: #"{"profileImageUrl":null,"displayName":"ベン"}"#).status == .ok)
        }
    }

    @Test("in an anonymous diary other members' photos stay null, as their names are aliases")
    func anonymous() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko"), ben = try await api.signIn("ben")
            let diary = try await api.createDiary("匿名", type: .anonymous, token: aiko.accessToken)
            #expect(try await api.join(diary.inviteCode, token: ben.accessToken).status == .ok)
            _ = try await Self.setPhoto(api, TestImages.jpeg(width: 8, height: 8), token: aiko.accessToken)
            #expect(try await api.post("だれでしょう", in: diary.id, token: aiko.accessToken).status == .created)
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: ben.accessToken).decode(MemberList.self).members
            #expect(members.count == 2 && members.allSatisfy { $0.profileImageUrl == nil })
            let page = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: ben.accessToken).decode(EntryPage.self)
            #expect(page.entries.first?.author.profileImageUrl == nil)
            let own = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: aiko.accessToken).decode(MemberList.self).members
            #expect(own.first { $0.userId == aiko.user.id }?.profileImageUrl != nil, "a member sees their own")
        }
    }

    @Test("replacing or removing the photo refuses its old URL and collects its file; the account's deletion does too")
    func replacedRemovedDeleted() async throws {
        try await APIHarness.run { api in try await Self.replacedRemovedDeleted(api, tag: "") }
    }

    static func replacedRemovedDeleted(_ api: APIHarness, tag: String) async throws {
        do {
            let aiko = try await api.signIn("aiko\(tag)")
            // Bytes no other test uploads: on a database that tests share (the cluster's), a row
            // of another test naming the same file keeps it, rightly.
            let side = Int.random(in: 100...900)
            let first = try await Self.setPhoto(api, TestImages.jpeg(width: side, height: 8), token: aiko.accessToken)
            let firstFile = try #require(try await Self.hash(api, of: aiko.user.id))
            let second = try await Self.setPhoto(api, TestImages.png(width: side, height: 5), type: "image/png", token: aiko.accessToken)
            let secondFile = try #require(try await Self.hash(api, of: aiko.user.id))
            #expect(try await api.fetch(try #require(first.profileImageUrl)).status == .forbidden)
            #expect(try await api.fetch(try #require(second.profileImageUrl)).status == .ok)
            try await Self.expectCollected(firstFile, api)
            #expect(try await api.store.contains(secondFile))

            let removed = try await api.call(.delete, "/v1/me/photo", token: aiko.accessToken)
            #expect(removed.status == .ok)
            #expect(try removed.decode(Me.self).profileImageUrl == nil)
            #expect(try await api.fetch(try #require(second.profileImageUrl)).status == .forbidden)
            #expect(try await api.call(.delete, "/v1/me/photo", token: aiko.accessToken).status == .ok, "removing none is no error")
            try await Self.expectCollected(secondFile, api)

            let third = try await Self.setPhoto(api, TestImages.jpeg(width: side, height: 9), token: aiko.accessToken)
            let thirdFile = try #require(try await Self.hash(api, of: aiko.user.id))
            #expect(try await api.call(.delete, "/v1/me", token: aiko.accessToken).status == .noContent)
            #expect(try await api.fetch(try #require(third.profileImageUrl)).status == .forbidden)
            try await Self.expectCollected(thirdFile, api)
        }
    }

    @Test("not an image, or a type it is not, is refused as an entry photo's upload is; nothing is kept")
    func refused() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let heic = try await api.upload([0, 0, 0, 24] + Array("ftypheic".utf8), type: "image/heic", token: aiko.accessToken, to: "/v1/me/photo", method: .put)
            #expect(heic.status == .unsupportedMediaType)
            let lying = try await api.upload(TestImages.png(width: 2, height: 2), type: "image/jpeg", token: aiko.accessToken, to: "/v1/me/photo", method: .put)
            #expect(lying.status == .unsupportedMediaType)
            #expect(try await api.call(.get, "/v1/me", token: aiko.accessToken).decode(Me.self).profileImageUrl == nil)
        }
    }

    @Test("the diary's export carries its members' photos as files the JSON and the book name; the personal export carries the caller's own")
    func exported() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko"), ben = try await api.signIn("ben")
            let diary = try await api.createDiary("ふたり", type: .couple, token: aiko.accessToken)
            #expect(try await api.join(diary.inviteCode, token: ben.accessToken).status == .ok)
            #expect(try await api.post("今日は晴れ", in: diary.id, token: aiko.accessToken).status == .created)
            _ = try await Self.setPhoto(api, TestImages.jpeg(width: 12, height: 12), token: aiko.accessToken)
            let hash = try #require(try await Self.hash(api, of: aiko.user.id))

            let unpacked = try await DiaryExportTests.unpack(try await DiaryExportTests.export(api, diary.id, token: ben.accessToken))
            let exported = try unpacked.decode(ExportedDiary.self, "diary.json")
            let path = try #require(exported.diary.members.first { $0.userId == aiko.user.id }?.profileImageUrl)
            #expect(path.hasPrefix("photos/") && path.hasSuffix(".jpg"), "\(path)")
            #expect(exported.diary.members.first { $0.userId == ben.user.id }?.profileImageUrl == nil)
            #expect(PhotoRepository.hash([UInt8](try unpacked.data(path))) == hash)
            let entries = try JSONSerialization.jsonObject(with: try unpacked.data("entries.json")) as? [[String: Any]]
            #expect((entries?.first?["author"] as? [String: Any])?["profileImageUrl"] as? String == path)
            let book = String(decoding: try unpacked.data("index.html"), as: UTF8.self)
            #expect(book.contains(#"<img class="avatar" src="\#(path)""#))

            let personal = try await DiaryExportTests.unpack(try await api.call(.get, "/v1/me/export", token: aiko.accessToken))
            let profile = try personal.decode(PersonalProfile.self, "profile.json")
            #expect(profile.me.profileImageUrl == path)
            #expect(PhotoRepository.hash([UInt8](try personal.data(path))) == hash)
            let others = try await DiaryExportTests.unpack(try await api.call(.get, "/v1/me/export", token: ben.accessToken))
            #expect(!FileManager.default.fileExists(atPath: others.folder.appendingPathComponent(path).path), "Ben's own export holds only his")
        }
    }

    @Test("migration 0029 empties every typed URL, which no release serves from then on; the users keep everything else")
    func typedURLsCleared() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let files = try MigrationFile.load(from: MigratedTemplate.migrationsDirectory)
                let before = files.filter { $0.version < 29 }
                _ = try await Migrator(pool: pool, files: before, definitions: [], logger: TestDatabase.logger).migrate()
                let user = UUID()
                try await pool.withTransaction { connection in
                    // As sign-in writes users, the one writer its guard lets through.
                    try await connection.query("select set_config('app.writer', 'open_session', true)")
                    try await connection.query("""
                        insert into users (id, display_name, profile_image_url, time_zone) values (\(user), 'aiko', 'https://tracker.example/p.gif', 'Asia/Tokyo')
                        """)
                }
                _ = try await Migrator(pool: pool, files: files, definitions: try MigratedTemplate.definitions(), logger: TestDatabase.logger).migrate()
                let row = try #require(try await pool.query("select display_name, profile_image_url from users where id = \(user)").first)
                #expect(try row.decode("display_name", as: String.self) == "aiko")
                #expect(try row.decode("profile_image_url", as: String?.self) == nil)
            }
        }
    }

    /// A sweep of our own, then the file gone: by it, or by the server's sweeper, which the
    /// change woke and which may hold the hash's claim while ours runs (SKIP LOCKED).
    static func expectCollected(_ hash: String, _ api: APIHarness) async throws {
        try await PhotoSweeper(pool: api.pool, store: api.store, logger: TestDatabase.logger).sweep()
        _ = try await waitForValue("the file \(hash.prefix(12)) collected") { try await api.store.contains(hash) ? nil : true }
    }

    static func hash(_ api: APIHarness, of user: UUID) async throws -> String? {
        try await api.asSuperuser("select content_hash from profile_photos where user_id = \(user)").first?.decode("content_hash", as: String.self)
    }
}
