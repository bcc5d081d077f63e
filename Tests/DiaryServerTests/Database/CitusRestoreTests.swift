import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore

/// A whole cluster restored to one moment: scripts/pitr.sh's three nodes, each archiving its
/// WAL with pgBackRest, a restore point taken on all of them at once (`restore-point`), and
/// every node restored to it. Run by scripts/test-citus.sh (CITUS_PITR_DATABASE_URL, the
/// coordinator's database as the owner).
@Suite("A cluster restored to one moment", .serialized)
struct CitusRestoreTests {
    static var ownerURL: String { get throws { try TestPlan.setting("CITUS_PITR_DATABASE_URL", plan: "cluster-restore") } }

    static func pitr(_ arguments: [String]) async throws -> String {
        let result = try await Spawn.run(ScratchCluster.packageRoot.appendingPathComponent("scripts/pitr.sh").path, arguments)
        try #require(result.status == 0, "scripts/pitr.sh \(arguments.joined(separator: " ")): \(result.output)")
        return result.output
    }

    @Test("every node restored to a named restore point: entries acknowledged before it are there with their counters and change log, and the photo of one deleted after it is served; what was acknowledged after it is not; check-counters finds nothing")
    func restoredToOneMoment() async throws {
        let owner = try PostgresConfiguration(url: try Self.ownerURL).as(TestDatabase.ownerRole)
        // Deleted photos' files stay an hour, the test's restore window.
        try await APIHarness.run(on: owner, deletedPhotosKept: .seconds(3600), citus: true) { api in
            _ = try await Self.pitr(["backup"])
            let tag = String(UUID().uuidString.prefix(8)).lowercased()
            let alice = try await api.signIn("pitr-alice-\(tag)"), bob = try await api.signIn("pitr-bob-\(tag)")
            let diary = try await api.createDiary("時を戻す", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let before = try await api.post("戻る先", in: diary.id, token: alice.accessToken).decode(Entry.self)
            let photo = try await EntryPhotoTests.upload(api, alice)
            let pictured = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken,
                                              body: CreateEntryRequest(content: "写真", photoIds: [photo.id])).decode(Entry.self)

            // As a superuser, which citus_create_restore_point requires.
            let superuser = try Self.ownerURL.replacingOccurrences(of: "diary_owner@", with: "postgres@")
            let name = "pitr-\(tag)"
            let taken = try await ServerProcess.runCommand(["restore-point", "--name", name, "--database-url", superuser])
            try #require(taken.status == 0, "\(taken.output)")

            let after = try await api.post("消える", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(before.id)/read", token: bob.accessToken).status.code < 300)
            // The photo's entry deleted after the point: its file must outlive the deletion.
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(pictured.id)", token: alice.accessToken).status == .noContent)
            var kept = PhotoSweeper.Options()
            kept.deletedFilesKept = .seconds(3600)
            _ = try await PhotoSweeper(pool: api.pool, store: try FolderPhotoStore(root: api.photoStore), options: kept, logger: TestDatabase.logger).collect()
            let size = try await api.asSuperuser("select sum(result::bigint)::int8 as bytes from run_command_on_all_nodes($$select pg_database_size(current_database())$$)")

            let clock = ContinuousClock()
            let started = clock.now
            _ = try await Self.pitr(["restore", name])
            let took = clock.now - started
            print("restore to one moment: three nodes, \(try size.first?.decode("bytes", as: Int.self) ?? 0) bytes of databases, restored in \(took)")

            // The servers' connections went with the nodes; the pool opens new ones.
            try await waitUntil("the diary answers after the restore", within: .seconds(60)) {
                try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: bob.accessToken).status == .ok
            }
            let timeline = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: bob.accessToken).decode(EntryPage.self)
            #expect(timeline.entries.map(\.id) == [pictured.id, before.id], "\(timeline.entries.map(\.content))")
            #expect(timeline.entries.last?.readBy.isEmpty == true, "bob's read came after the point")
            let restoredPhoto = try #require(timeline.entries.first?.photos.first)
            #expect(try await api.fetch(restoredPhoto.url).status == .ok, "the photo of the entry deleted after the point is served")
            let shown = try await api.call(.get, "/v1/diaries/\(diary.id)", token: bob.accessToken).decode(Diary.self)
            #expect(shown.unreadCount == 2)
            let counted = try await api.asSuperuser("select entry_count from diaries where id = \(diary.id)")
            #expect(try counted.first?.decode("entry_count", as: Int.self) == 2)
            let logged = try await api.asSuperuser("select entry_id as id from change_log where diary_id = \(diary.id) and kind = 'entry.created' order by position")
            #expect(try logged.map { try $0.decode("id", as: UUID.self) } == [before.id, pictured.id])
            #expect(!timeline.entries.contains { $0.id == after.id })
            let differences = try await TestDatabase.withPool(owner, size: 1) { try await CounterReconciliation(pool: $0).differences() }
            #expect(differences.isEmpty, "\(differences)")
            // And it takes writes again.
            #expect(try await api.post("戻った後", in: diary.id, token: alice.accessToken).status == .created)
        }
    }
}
