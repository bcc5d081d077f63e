import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// Photos on entries: plan limits, ownership, replays, edits, and their files' removal.
@Suite("Entry photos")
struct EntryPhotoTests {
    struct Couple {
        var alice: Session
        var bob: Session
        var diary: Diary
    }

    static func couple(_ api: APIHarness) async throws -> Couple {
        let alice = try await api.signIn("Alice")
        let bob = try await api.signIn("Bob")
        let diary = try await api.createDiary("ふたり", type: .couple, token: alice.accessToken)
        #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
        return Couple(alice: alice, bob: bob, diary: diary)
    }

    static func upload(_ api: APIHarness, _ session: Session, width: Int = 16) async throws -> Photo {
        try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: width, height: 8), token: session.accessToken))
    }

    static func makePremium(_ api: APIHarness, _ session: Session) async throws {
        try await api.asSuperuser("update users set premium_expires_at = now() + interval '30 days' where id = \(session.user.id)")
    }

    static func post(_ api: APIHarness, _ couple: Couple, id: UUID? = nil, content: String = "今日", photos: [UUID]) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                           body: CreateEntryRequest(id: id, content: content, photoIds: photos))
    }

    /// The content hash that names the photo's bytes in the store.
    static func hash(_ api: APIHarness, of photo: Photo) async throws -> String {
        try await api.asSuperuser("""
            select content_hash from entry_photos where id = \(photo.id) union all select content_hash from photo_uploads where id = \(photo.id)
            """).first!.decode("content_hash", as: String.self)
    }

    static func file(_ api: APIHarness, of photo: Photo) async throws -> String {
        let hash = try await hash(api, of: photo)
        return "\(api.photoStore)/\(hash.prefix(2))/\(hash)"
    }

    @Test("free: one photo an entry, two is premium_required; premium: four; five is validation_failed")
    func planLimits() async throws {
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            var photos: [Photo] = []
            for width in 1...5 { photos.append(try await Self.upload(api, couple.alice, width: width * 8)) }
            let two = try await Self.post(api, couple, photos: photos[0..<2].map(\.id))
            #expect(two.status == .forbidden && two.code == "premium_required")
            let one = try await Self.post(api, couple, photos: [photos[0].id])
            #expect(one.status == .created)
            #expect(try one.decode(Entry.self).photos.map(\.id) == [photos[0].id])

            try await Self.makePremium(api, couple.alice)
            let four = try await Self.post(api, couple, photos: photos[1...4].map(\.id))
            #expect(four.status == .created)
            let entry = try four.decode(Entry.self)
            #expect(entry.photos.map(\.id) == photos[1...4].map(\.id), "in the order given")
            #expect(entry.photos.map(\.width) == [16, 24, 32, 40])
            #expect(entry.images == entry.photos.map(\.url), "images holds the same URLs for older clients")
            let five = try await Self.post(api, couple, photos: photos.map(\.id))
            #expect(five.status == .badRequest && five.code == "validation_failed")
            let twice = try await Self.post(api, couple, photos: [photos[1].id, photos[1].id])
            #expect(twice.status == .badRequest)
        }
    }

    @Test("someone else's photo or an unknown id is 404; one already on another entry is photo_in_use")
    func ownership() async throws {
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            let bobs = try await Self.upload(api, couple.bob)
            let foreign = try await Self.post(api, couple, photos: [bobs.id])
            #expect(foreign.status == .notFound)
            #expect(try await Self.post(api, couple, photos: [UUID()]).status == .notFound)

            let mine = try await Self.upload(api, couple.alice)
            #expect(try await Self.post(api, couple, photos: [mine.id]).status == .created)
            let again = try await Self.post(api, couple, photos: [mine.id])
            #expect(again.status == .conflict && again.code == "photo_in_use")
            // Bob attaching Alice's attached photo learns nothing about it.
            let bobTries = try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.bob.accessToken,
                                              body: CreateEntryRequest(content: "x", photoIds: [mine.id]))
            #expect(bobTries.status == .notFound)
            // Nothing was created by the refused posts.
            #expect(try await api.asSuperuser("select count(*) from entries").first!.decode("count", as: Int.self) == 1)
        }
    }

    @Test("a replay with the same photos is the same entry; with other photos it is entry_id_conflict")
    func replay() async throws {
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            let first = try await Self.upload(api, couple.alice)
            let second = try await Self.upload(api, couple.alice)
            let id = UUID()
            let created = try await Self.post(api, couple, id: id, photos: [first.id])
            #expect(created.status == .created, "\(created.text)")
            let replayed = try await Self.post(api, couple, id: id, photos: [first.id])
            #expect(replayed.status == .ok)
            #expect(try replayed.decode(Entry.self).photos.map(\.id) == [first.id])
            let other = try await Self.post(api, couple, id: id, photos: [second.id])
            #expect(other.status == .conflict && other.code == "entry_id_conflict")
            let none = try await Self.post(api, couple, id: id, photos: [])
            #expect(none.status == .conflict)
            // The replays changed nothing, and the second photo is still an unattached upload.
            let entry = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries/\(id)", token: couple.alice.accessToken).decode(Entry.self)
            #expect(entry.photos.map(\.id) == [first.id])
            #expect(try await api.asSuperuser("select count(*) from photo_uploads where id = \(second.id)").first!.decode("count", as: Int.self) == 1)
        }
    }

    @Test("with PHOTO_DELETED_KEEP_HOURS, a deleted photo's file stays that long after the deletion, then goes")
    func deletedFilesKept() async throws {
        try await APIHarness.run(deletedPhotosKept: .seconds(3600)) { api in
            let couple = try await Self.couple(api)
            let photo = try await Self.upload(api, couple.alice)
            let entry = try await Self.post(api, couple, photos: [photo.id]).decode(Entry.self)
            let file = try await Self.file(api, of: photo)
            #expect(try await api.call(.delete, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: couple.alice.accessToken).status == .noContent)
            var options = PhotoSweeper.Options()
            options.deletedFilesKept = .seconds(3600)
            let sweeper = PhotoSweeper(pool: api.pool, store: try FolderPhotoStore(root: api.photoStore), options: options, logger: TestDatabase.logger)
            #expect(try await sweeper.collect() == 0)
            #expect(FileManager.default.fileExists(atPath: file), "deleted a moment ago: kept")
            try await api.asSuperuser("update photo_garbage set queued_at = now() - interval '61 minutes'")
            // This sweeper, or the application's if it claims the hash first, removes it now.
            _ = try await sweeper.collect()
            try await waitUntil("the file removed", within: .seconds(30)) {
                try await api.asSuperuser("select 1 from photo_garbage").isEmpty && !FileManager.default.fileExists(atPath: file)
            }
        }
    }

    @Test("PATCH photoIds replaces the photos in order; a dropped photo's row and file go")
    func patchReplaces() async throws {
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            try await Self.makePremium(api, couple.alice)
            let photos = [try await Self.upload(api, couple.alice, width: 8), try await Self.upload(api, couple.alice, width: 16), try await Self.upload(api, couple.alice, width: 24)]
            let entry = try await Self.post(api, couple, photos: [photos[0].id, photos[1].id]).decode(Entry.self)
            let dropped = try await Self.file(api, of: photos[0])
            let path = "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)"
            let patched = try await api.call(.patch, path, token: couple.alice.accessToken, body: UpdateEntryRequest(photoIds: [photos[2].id, photos[1].id]))
            #expect(patched.status == .ok)
            #expect(try patched.decode(Entry.self).photos.map(\.id) == [photos[2].id, photos[1].id])
            #expect(try await api.asSuperuser("select count(*) from entry_photos where id = \(photos[0].id)").first!.decode("count", as: Int.self) == 0)
            try await waitUntil { !FileManager.default.fileExists(atPath: dropped) }
            // Content alone leaves the photos be; Bob may not touch them.
            let contentOnly = try await api.call(.patch, path, token: couple.alice.accessToken, body: UpdateEntryRequest(content: "edited"))
            #expect(try contentOnly.decode(Entry.self).photos.map(\.id) == [photos[2].id, photos[1].id])
            let bob = try await api.call(.patch, path, token: couple.bob.accessToken, body: UpdateEntryRequest(photoIds: []))
            #expect(bob.status == .forbidden)
            let cleared = try await api.call(.patch, path, token: couple.alice.accessToken, body: UpdateEntryRequest(photoIds: []))
            #expect(try cleared.decode(Entry.self).photos.isEmpty)
        }
    }

    @Test("members get URLs in entries and timelines; a non-member gets neither the entry nor a URL")
    func onlyMembersGetURLs() async throws {
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            let photo = try await Self.upload(api, couple.alice)
            let entry = try await Self.post(api, couple, photos: [photo.id]).decode(Entry.self)
            let page = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries", token: couple.bob.accessToken).decode(EntryPage.self)
            let url = try #require(page.entries.first?.photos.first?.url)
            #expect(try await api.fetch(url).status == .ok)

            let carol = try await api.signIn("Carol")
            let single = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: carol.accessToken)
            let timeline = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries", token: carol.accessToken)
            // Delta sync (and so the socket, which reads the same log) gives members URLs too.
            let start = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/entries", token: couple.bob.accessToken).decode(EntryPage.self)
            let cursor = try #require(start.changesCursor)
            let second = try await Self.post(api, couple, photos: [try await Self.upload(api, couple.alice, width: 24).id]).decode(Entry.self)
            // The log shows a change once no older transaction can still commit before it.
            @Sendable func created() async throws -> Entry? {
                let list = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/changes?since=\(cursor)", token: couple.bob.accessToken).decode(ChangeList.self)
                return list.changes.lazy.compactMap { event -> Entry? in
                    guard event.type == .entryCreated, case .entry(let entry) = event.data, entry.id == second.id else { return nil }
                    return entry
                }.first
            }
            try await waitUntil(within: .seconds(30)) { try await created() != nil }
            let changed = try #require(try await created())
            #expect(try await api.fetch(try #require(changed.photos.first?.url)).status == .ok)
            let changes = try await api.call(.get, "/v1/diaries/\(couple.diary.id)/changes?since=\(cursor)", token: carol.accessToken)
            for reply in [single, timeline, changes] {
                #expect(reply.status == .notFound)
                #expect(!reply.text.contains("/v1/photos/"))
            }
        }
    }

    @Test("deleting an entry, or the author's account, removes the photos' rows at once and their files after", arguments: PhotoStoreKind.allCases)
    func deletion(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let couple = try await Self.couple(api)
            let photo = try await Self.upload(api, couple.alice)
            let entry = try await Self.post(api, couple, photos: [photo.id]).decode(Entry.self)
            let hash = try await Self.hash(api, of: photo)
            #expect(try await api.store.contains(hash))
            #expect(try await api.call(.delete, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: couple.alice.accessToken).status == .noContent)
            #expect(try await api.fetch(photo.url).status == .forbidden)
            try await waitUntil { try await !api.store.contains(hash) }

            let kept = try await Self.upload(api, couple.alice, width: 24)
            _ = try await Self.post(api, couple, photos: [kept.id])
            let unattached = try await Self.upload(api, couple.alice, width: 32)
            let hashes = [try await Self.hash(api, of: kept), try await Self.hash(api, of: unattached)]
            #expect(try await api.call(.delete, "/v1/me", token: couple.alice.accessToken).status == .noContent)
            try await waitUntil {
                for hash in hashes where try await api.store.contains(hash) { return false }
                return true
            }
            #expect(try await api.asSuperuser("select (select count(*) from entry_photos) + (select count(*) from photo_uploads) as n").first!.decode("n", as: Int.self) == 0)
        }
    }

    @Test("the same bytes uploaded twice share a file, which stays while either photo does", arguments: PhotoStoreKind.allCases)
    func sharedFile(store: PhotoStoreKind) async throws {
        try await APIHarness.run(photoStore: store) { api in
            let couple = try await Self.couple(api)
            let first = try await Self.upload(api, couple.alice)
            let second = try await Self.upload(api, couple.bob)
            let hash = try await Self.hash(api, of: first)
            #expect(try await Self.hash(api, of: second) == hash)
            let entry = try await Self.post(api, couple, photos: [first.id]).decode(Entry.self)
            #expect(try await api.call(.delete, "/v1/diaries/\(couple.diary.id)/entries/\(entry.id)", token: couple.alice.accessToken).status == .noContent)
            let sweeper = PhotoSweeper(pool: api.pool, store: api.store, logger: TestDatabase.logger)
            try await sweeper.collect()
            #expect(try await api.store.contains(hash), "Bob's upload still names it")
            #expect(try await api.fetch(second.url).status == .ok)
        }
    }

    @Test("the sweeper deletes uploads never attached after 24 h, and files that no row names")
    func sweeper() async throws {
        try await APIHarness.run { api in try await Self.sweeperCollects(api) }
    }

    /// One sweep on whatever database `api` serves (also the cluster: CitusClusterTests).
    static func sweeperCollects(_ api: APIHarness, name: String = "Alice") async throws {
        let alice = try await api.signIn(name)
        let stale = try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 8, height: 8), token: alice.accessToken))
        let fresh = try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 16, height: 8), token: alice.accessToken))
        let staleFile = try await Self.file(api, of: stale)
        let freshFile = try await Self.file(api, of: fresh)
        try await api.asSuperuser("update photo_uploads set created_at = now() - interval '25 hours' where id = \(stale.id)")

        let store = try FolderPhotoStore(root: api.photoStore)
        let orphanBytes = TestImages.png(width: 2, height: 2)
        let orphan = PhotoRepository.hash(orphanBytes)
        try await store.put(orphanBytes, hash: orphan)
        let youngBytes = TestImages.png(width: 3, height: 2)
        let young = PhotoRepository.hash(youngBytes)
        try await store.put(youngBytes, hash: young)
        let hourAgo = Date().addingTimeInterval(-7200)
        for path in [store.path(of: orphan), freshFile] {
            try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: path)
        }

        let sweeper = PhotoSweeper(pool: api.pool, store: store, logger: TestDatabase.logger)
        try await sweeper.sweep()
        #expect(!FileManager.default.fileExists(atPath: staleFile))
        #expect(!FileManager.default.fileExists(atPath: store.path(of: orphan)))
        #expect(FileManager.default.fileExists(atPath: store.path(of: young)), "a file this young may be an upload in progress")
        #expect(FileManager.default.fileExists(atPath: freshFile), "an old file that a row names stays")
        #expect(try await api.fetch(fresh.url).status == .ok)
        #expect(try await api.fetch(stale.url).status == .forbidden)
    }
}
