import DiaryKit
import Foundation
import Testing

/// Photos: upload from Data, attach, download whole, by range and conditionally, with the
/// headers sent as the server reads them.
@Suite("Photos")
struct PhotoTests {
    /// A 1×1 PNG.
    static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!

    @Test("a profile photo set from Data and from a file reaches a member's view of the diary by the server's URL; removed, it is gone")
    func profilePhoto() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko"), ben = try await server.signedIn("ben")
            let diary = try await aiko.createDiary(name: "ふたり", type: .couple)
            _ = try await ben.joinDiary(inviteCode: diary.inviteCode)
            let me = try await aiko.setProfilePhoto(Self.png, format: .png)
            let url = try #require(me.profileImageURL)
            let members = try await ben.members(diaryID: diary.id)
            #expect(members.first { $0.userID == me.id }?.profileImageURL == url)

            let source = FileManager.default.temporaryDirectory.appendingPathComponent("profile-\(UUID().uuidString).png")
            try Self.png.write(to: source)
            defer { try? FileManager.default.removeItem(at: source) }
            let replaced = try await aiko.setProfilePhoto(fileURL: source, format: .png)
            #expect(replaced.profileImageURL != nil && replaced.profileImageURL != url)
            #expect(try await aiko.removeProfilePhoto().profileImageURL == nil)
            #expect(try await aiko.me().profileImageURL == nil)
        }
    }

    @Test("upload, attach, download whole, a range (206), and not modified (304)")
    func photoRoundTrip() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let diary = try await aiko.createDiary(name: "photos", type: .friends)
            let photo = try await aiko.uploadPhoto(Self.png, format: .png)
            #expect(photo.format == .png && photo.contentType == "image/png")
            #expect(photo.width == 1 && photo.height == 1)
            #expect(!photo.isURLExpired())

            let entry = try await aiko.post(EntryDraft(diaryID: diary.id, content: "with a photo", photoIDs: [photo.id]))
            let attached = try #require(entry.photos.first)
            #expect(attached.id == photo.id)

            guard case .full(let bytes, let etag) = try await aiko.downloadPhoto(attached) else {
                Issue.record("not the whole photo")
                return
            }
            #expect(bytes.count == attached.bytes)
            #expect(bytes.prefix(8) == Self.png.prefix(8))
            let tag = try #require(etag)

            guard case .partial(let head, let contentRange) = try await aiko.downloadPhoto(attached, range: 0...9) else {
                Issue.record("Range was not honoured (sent percent-encoded?)")
                return
            }
            #expect(head == bytes.prefix(10))
            #expect(contentRange == "bytes 0-9/\(bytes.count)")

            let conditional = try await aiko.downloadPhoto(attached, ifNoneMatch: tag)
            #expect(conditional == .notModified, "If-None-Match was not honoured (sent percent-encoded?)")
        }
    }

    @Test("a photo goes up from a file in pieces with progress, and down into a file, never whole in memory")
    func photoFiles() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("diarykit-files-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let image = UncompressedPNG.make(width: 400, height: 400)
            let source = directory.appendingPathComponent("picked.png")
            try image.write(to: source)

            let reports = ProgressLog()
            let photo = try await aiko.uploadPhoto(fileURL: source, format: .png) { reports.add($0) }
            #expect(photo.width == 400 && photo.height == 400)
            let uploaded = reports.all
            #expect(uploaded.count >= 3, "\(image.count) bytes in 64 KiB pieces")
            #expect(uploaded.map(\.completed) == uploaded.map(\.completed).sorted())
            #expect(uploaded.last == TransferProgress(completed: Int64(image.count), total: Int64(image.count)))

            let diary = try await aiko.createDiary(name: "files", type: .friends)
            let entry = try await aiko.post(EntryDraft(diaryID: diary.id, content: "from a file", photoIDs: [photo.id]))
            let attached = try #require(entry.photos.first)
            let target = directory.appendingPathComponent("downloaded.png")
            let downloads = ProgressLog()
            guard case .written(let etag) = try await aiko.downloadPhoto(attached, to: target, progress: { downloads.add($0) }) else {
                Issue.record("not written")
                return
            }
            let stored = try Data(contentsOf: target)
            #expect(stored.count == attached.bytes)
            guard case .full(let inMemory, _) = try await aiko.downloadPhoto(attached) else {
                Issue.record("not the whole photo")
                return
            }
            #expect(stored == inMemory)
            #expect(downloads.all.last?.completed == Int64(attached.bytes))
            #expect(try await aiko.downloadPhoto(attached, to: target, ifNoneMatch: etag) == .notModified)
            #expect(try Data(contentsOf: target) == stored)
            // Nothing half-written is left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["downloaded.png", "picked.png"])
        }
    }

    final class ProgressLog: @unchecked Sendable {
        private let lock = NSLock()
        private var reports: [TransferProgress] = []
        func add(_ progress: TransferProgress) { lock.withLock { reports.append(progress) } }
        var all: [TransferProgress] { lock.withLock { reports } }
    }

    @Test("bytes that are not an image are refused as invalid_image")
    func invalidImage() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            do {
                // A PNG's signature and header chunk, then nothing: a PNG by its first bytes, not an image.
                _ = try await aiko.uploadPhoto(Self.png.prefix(33), format: .png)
                Issue.record("text was stored as a photo")
            } catch let error as DiaryError {
                #expect(error.code == .invalidImage)
            }
        }
    }
}
