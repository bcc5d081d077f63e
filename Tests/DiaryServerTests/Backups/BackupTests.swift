import DiaryModels
import Foundation
import PostgresClient
import S3Client
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// `diary-server backup` and `verify-backup` through the built binary, on a real migrated
/// database with photos, and the scheduler that runs them inside `serve`. Serialized: each
/// test restores into scratch databases, and the last one counts what is left of them.
@Suite("Backups", .serialized, .timeLimit(.minutes(5)))
struct BackupTests {
    /// A couple's diary with entries, two photos attached and one upload left unattached.
    struct Fixture {
        var api: APIHarness
        var owner: String
        var backups: String
        var photos: [String]
    }

    static func withFixture(_ body: @Sendable (Fixture) async throws -> Void) async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            for (index, width) in [16, 24].enumerated() {
                let photo = try await EntryPhotoTests.upload(api, couple.alice, width: width)
                let reply = try await EntryPhotoTests.post(api, couple, content: "写真 \(index)", photos: [photo.id])
                #expect(reply.status == .created, "\(reply.text)")
            }
            _ = try await EntryPhotoTests.upload(api, couple.alice, width: 32)
            for content in ["一", "二", "三"] {
                #expect(try await api.post(content, in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            }
            let asked = try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.bob.accessToken,
                                           body: CreateEntryRequest(content: "答え", question: "今日のいちばんは?"))
            #expect(asked.status == .created, "\(asked.text)")
            let photos = try await api.asSuperuser("""
                select content_hash from photo_uploads union select content_hash from entry_photos order by 1
                """).map { try $0.decode("content_hash", as: String.self) }
            #expect(photos.count == 3)
            let backups = FileManager.default.temporaryDirectory.appendingPathComponent("diary-backups-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: backups) }
            let owner = try ServerProcess.url(of: api.database.as(TestDatabase.ownerRole))
            try await body(Fixture(api: api, owner: owner, backups: backups, photos: photos))
        }
    }

    static func backup(_ fixture: Fixture, _ extra: [String] = []) async throws -> (status: Int32, output: String) {
        try await ServerProcess.runCommand(["backup", "--to", fixture.backups, "--photo-store", fixture.api.photoStore, "--database-url", fixture.owner] + extra)
    }

    static func verify(_ fixture: Fixture, _ path: String) async throws -> (status: Int32, output: String) {
        try await ServerProcess.runCommand(["verify-backup", path, "--database-url", fixture.owner])
    }

    /// The folder a successful `backup` printed: its standard output's one line.
    static func folder(_ output: String) throws -> String {
        try #require(output.split(separator: "\n").map(String.init).last { $0.hasPrefix("/") })
    }

    static func runs(_ api: APIHarness) async throws -> [(location: String, entries: Int, verified: Bool?)] {
        try await api.asSuperuser("select location, entry_count, verified from backup_runs order by id").map {
            (try $0.decode("location"), try $0.decode("entry_count"), try $0.decode("verified"))
        }
    }

    static func modified(_ path: String) throws -> Date {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
    }

    /// Flips the bits of one byte in the middle of `path`; returns how to put it back.
    static func corrupt(_ path: String) throws -> () throws -> Void {
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        var changed = original
        changed[changed.count / 2] ^= 0xFF
        try changed.write(to: URL(fileURLWithPath: path))
        return { try original.write(to: URL(fileURLWithPath: path)) }
    }

    @Test("backup → verify-backup: OK and recorded; a second backup copies no photo that is already there")
    func roundTrip() async throws {
        try await Self.withFixture { fixture in
            let first = try await Self.backup(fixture)
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains("photos: 3 copied"), "\(first.output)")
            let folder = try Self.folder(first.output)
            let layout = BackupLayout(root: fixture.backups)
            #expect(layout.completeBackups().map(layout.folder) == [folder])
            #expect(layout.partialFolders().isEmpty)
            let manifest = try BackupManifest.decode(try Data(contentsOf: URL(fileURLWithPath: "\(folder)/manifest.json")))
            #expect(manifest.entries.count == 6)
            #expect(manifest.photos == fixture.photos)
            #expect(manifest.tables["entries"] == 6 && manifest.tables["entry_photos"] == 2 && manifest.tables["photo_uploads"] == 1)
            #expect(manifest.tables["backup_runs"] == 0, "the snapshot precedes its own record")
            for hash in fixture.photos {
                #expect(PhotoRepository.hash(Array(try Data(contentsOf: URL(fileURLWithPath: layout.photo(hash))))) == hash)
            }

            let verified = try await Self.verify(fixture, fixture.backups)
            #expect(verified.status == 0, "\(verified.output)")
            #expect(verified.output.contains("entries:         6") && verified.output.contains("photos checked:  3"), "\(verified.output)")
            #expect(verified.output.hasSuffix("OK\n") || verified.output.contains("\nOK"), "\(verified.output)")
            #expect(try await Self.runs(fixture.api).map(\.location) == [folder])
            #expect(try await Self.runs(fixture.api).first?.verified == true)
            #expect(try await Self.runs(fixture.api).first?.entries == 6)

            let before = try fixture.photos.map { try Self.modified(layout.photo($0)) }
            let second = try await Self.backup(fixture)
            #expect(second.status == 0, "\(second.output)")
            #expect(second.output.contains("photos: 0 copied (0 bytes), 3 already there"), "\(second.output)")
            let secondFolder = try Self.folder(second.output)
            #expect(secondFolder != folder)
            #expect(try fixture.photos.map { try Self.modified(layout.photo($0)) } == before)
            let again = try await Self.verify(fixture, secondFolder)
            #expect(again.status == 0, "\(again.output)")
            #expect(try await Self.runs(fixture.api).map(\.verified) == [true, true])
        }
    }

    @Test("with PHOTO_STORE=s3 the backup copies the photos from the bucket, and verify-backup re-hashes them")
    func fromTheBucket() async throws {
        try await APIHarness.run(photoStore: .s3) { api in
            let couple = try await EntryPhotoTests.couple(api)
            let photo = try await EntryPhotoTests.upload(api, couple.alice, width: 24)
            #expect(try await EntryPhotoTests.post(api, couple, photos: [photo.id]).status == .created)
            let hash = try await EntryPhotoTests.hash(api, of: photo)
            let store = try #require(api.store as? S3PhotoStore)
            let bucket = try TestBucket.configuration()
            let backups = FileManager.default.temporaryDirectory.appendingPathComponent("diary-backups-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: backups) }
            let owner = try ServerProcess.url(of: api.database.as(TestDatabase.ownerRole))
            let settings = [
                "PHOTO_STORE": "s3", "S3_ENDPOINT": bucket.endpoint.absoluteString, "S3_REGION": bucket.region, "S3_BUCKET": bucket.bucket,
                "S3_ACCESS_KEY_ID": bucket.credentials.accessKeyID, "S3_SECRET_ACCESS_KEY": bucket.credentials.secretAccessKey,
                "S3_PATH_STYLE": "1", "S3_PREFIX": store.prefix,
            ]
            let made = try await ServerProcess.runCommand(["backup", "--to", backups, "--database-url", owner], adding: settings)
            #expect(made.status == 0 && made.output.contains("photos: 1 copied"), "\(made.output)")
            let layout = BackupLayout(root: backups)
            #expect(PhotoRepository.hash(Array(try Data(contentsOf: URL(fileURLWithPath: layout.photo(hash))))) == hash)
            let verified = try await ServerProcess.runCommand(["verify-backup", backups, "--database-url", owner])
            #expect(verified.status == 0 && verified.output.contains("photos checked:  1"), "\(verified.output)")
        }
    }

    @Test("a corrupted dump or a changed photo fails verify-backup, which names it and records the failure")
    func corruptionDetected() async throws {
        try await Self.withFixture { fixture in
            let made = try await Self.backup(fixture)
            #expect(made.status == 0, "\(made.output)")
            let folder = try Self.folder(made.output)

            let restoreDump = try Self.corrupt("\(folder)/database.dump")
            let dump = try await Self.verify(fixture, folder)
            #expect(dump.status == 1, "\(dump.output)")
            #expect(dump.output.contains("FAILED: 1 difference") && dump.output.contains("database.dump: corrupt"), "\(dump.output)")
            #expect(try await Self.runs(fixture.api).first?.verified == false)
            try restoreDump()

            let photo = BackupLayout(root: fixture.backups).photo(fixture.photos[1])
            let restorePhoto = try Self.corrupt(photo)
            let changed = try await Self.verify(fixture, folder)
            #expect(changed.status == 1, "\(changed.output)")
            #expect(changed.output.contains("FAILED: 1 difference") && changed.output.contains("photo \(fixture.photos[1]): its file's sha256 is"), "\(changed.output)")
            try FileManager.default.removeItem(atPath: photo)
            let gone = try await Self.verify(fixture, folder)
            #expect(gone.status == 1 && gone.output.contains("photo \(fixture.photos[1]): missing"), "\(gone.output)")
            try restorePhoto()

            let repaired = try await Self.verify(fixture, folder)
            #expect(repaired.status == 0, "\(repaired.output)")
            #expect(try await Self.runs(fixture.api).first?.verified == true)
        }
    }

    @Test("a backup whose pg_dump fails exits non-zero and leaves nothing that looks complete, nor a record")
    func failedBackupLeavesNothing() async throws {
        try await Self.withFixture { fixture in
            let failed = try await Self.backup(fixture, ["--pg-dump", "/bin/false"])
            #expect(failed.status == 1, "\(failed.output)")
            #expect(failed.output.contains("pg_dump exited with status 1"), "\(failed.output)")
            let layout = BackupLayout(root: fixture.backups)
            #expect(layout.completeBackups().isEmpty)
            #expect(layout.partialFolders().isEmpty)
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.backups)
            #expect(names.allSatisfy { $0 == "photos" || $0 == ".lock" }, "\(names)")
            #expect(try await Self.runs(fixture.api).isEmpty)

            let nothing = try await Self.verify(fixture, fixture.backups)
            #expect(nothing.status == 1 && nothing.output.contains("holds no complete backup"), "\(nothing.output)")
            let missing = try await Self.backup(fixture, ["--pg-dump", "/nonexistent/pg_dump"])
            #expect(missing.status == 1 && missing.output.contains("/nonexistent/pg_dump is not an executable file"), "\(missing.output)")
        }
    }

    @Test("a photo the database names but the store lacks: the backup is made, exits 1 naming it, and verification notes it")
    func lostPhoto() async throws {
        try await Self.withFixture { fixture in
            let lost = fixture.photos[0]
            try FileManager.default.removeItem(atPath: "\(fixture.api.photoStore)/\(lost.prefix(2))/\(lost)")
            let made = try await Self.backup(fixture)
            #expect(made.status == 1, "\(made.output)")
            #expect(made.output.contains("1 photo(s) the database names are missing from the photo store: \(lost)"), "\(made.output)")
            let folder = try Self.folder(made.output)
            let manifest = try BackupManifest.decode(try Data(contentsOf: URL(fileURLWithPath: "\(folder)/manifest.json")))
            #expect(manifest.missingPhotos == [lost] && manifest.photos == Array(fixture.photos.dropFirst()))
            let verified = try await Self.verify(fixture, folder)
            #expect(verified.status == 0 && verified.output.contains("note: 1 photo(s) were not in the source's store"), "\(verified.output)")
        }
    }

    @Test("a tool's task cancelled (a server stopping mid-dump) kills the tool")
    func toolCancelled() async throws {
        let sleep = try ExternalTool.locate("sleep", override: nil, searchPath: "/usr/bin:/bin")
        let began = ContinuousClock.now
        // 30 s, spelled so that this test's sleep is told apart from any other's.
        let marker = "30.\(Int.random(in: 100_000...999_999))"
        let run = Task { try await sleep.run([marker]) }
        // Cancelled once the tool runs, so that it is the tool that is killed, not a launch.
        try await waitUntil("sleep runs") { Self.runningChildren(named: "sleep").contains { $0.arguments.last == marker } }
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        #expect(ContinuousClock.now - began < .seconds(5))
    }

    @Test("a tool inherits none of the server's open descriptors: only its standard input, output and error")
    func toolInheritsNoDescriptor() async throws {
        let list = try ExternalTool.locate("ls", override: nil, searchPath: "/usr/bin:/bin")
        // This process holds hundreds of sockets and files while the suites run, and this one more.
        let held = open("/dev/null", O_RDONLY)
        defer { close(held) }
        #expect(held > 2)
        let descriptors = try await list.run(["-1", "/proc/self/fd"]).split(separator: "\n").compactMap { Int($0) }
        // ls's own: 0, 1 and 2, and the lowest free one, 3, that it reads /proc/self/fd through.
        #expect(!descriptors.isEmpty && descriptors.allSatisfy { $0 <= 3 }, "\(descriptors)")
    }

    @Test("the scheduler: one server at a time, only when due, verified, pruned to `keep` with their photos")
    func scheduler() async throws {
        try await Self.withFixture { fixture in
            let owner = fixture.api.database.as(TestDatabase.ownerRole)
            let path = ProcessInfo.processInfo.environment["PATH"]
            var options = BackupScheduler.Options(
                directory: fixture.backups,
                pgDump: try ExternalTool.locate("pg_dump", override: nil, searchPath: path),
                pgRestore: try ExternalTool.locate("pg_restore", override: nil, searchPath: path)
            )
            options.schedule.interval = .zero
            options.keep = 2
            try await TestDatabase.withPool(owner, size: 2) { pool in
                let store = try FolderPhotoStore(root: fixture.api.photoStore)
                let scheduler = BackupScheduler(pool: pool, store: store, options: options, logger: TestDatabase.logger)
                guard case .backedUp(let first, verified: true) = await scheduler.tick() else {
                    Issue.record("the first tick made no verified backup")
                    return
                }
                // The unattached upload goes: the next backups do not name its photo.
                let unattached = try await fixture.api.asSuperuser("select content_hash from photo_uploads").first!.decode("content_hash", as: String.self)
                try await fixture.api.asSuperuser("select expire_photo_uploads(interval '0')")

                try await TestDatabase.withPool(owner, size: 1) { other in
                    try await other.withConnection { connection in
                        try await connection.query("select pg_advisory_lock(\(BackupScheduler.advisoryLockKey))")
                        #expect(await scheduler.tick() == .locked)
                        try await connection.query("select pg_advisory_unlock(\(BackupScheduler.advisoryLockKey))")
                    }
                }
                for _ in 0..<2 {
                    guard case .backedUp(_, verified: true) = await scheduler.tick() else {
                        Issue.record("a tick made no verified backup")
                        return
                    }
                }
                let layout = BackupLayout(root: fixture.backups)
                #expect(layout.completeBackups().count == 2)
                #expect(!layout.completeBackups().map(layout.folder).contains(first), "the oldest backup is pruned")
                #expect(!FileManager.default.fileExists(atPath: layout.photo(unattached)), "its photo, which no kept backup names, too")
                #expect(fixture.photos.filter { $0 != unattached }.allSatisfy { FileManager.default.fileExists(atPath: layout.photo($0)) })
                #expect(try await Self.runs(fixture.api).map(\.verified) == [true, true, true])

                var daily = options
                daily.schedule.interval = .seconds(24 * 3600)
                let notDue = BackupScheduler(pool: pool, store: store, options: daily, logger: TestDatabase.logger)
                #expect(await notDue.tick() == .notDue)
            }
            let left = try await TestDatabase.withAdminPool { try await $0.query("select count(*) as n from pg_database where datname like 'diary_verify_%'") }
            #expect(try left[0].decode("n", as: Int.self) == 0, "every scratch database is dropped")
        }
    }

    /// This process's children named `name`, with their command lines, from /proc.
    static func runningChildren(named name: String) -> [(pid: Int32, arguments: [String])] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> (pid: Int32, arguments: [String])? in
            guard let pid = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == me, stat.contains("(\(name))"),
                  let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
            return (pid, raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
        }
    }
}

