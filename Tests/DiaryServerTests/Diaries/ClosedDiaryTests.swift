import DiaryModels
import Foundation
import Logging
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// A diary whose last member leaves is closed, never deleted at once: its former members may
/// restore it, or export their own entries, until its deletion date.
@Suite("Closed diaries")
struct ClosedDiaryTests {
    static func closedState(_ api: APIHarness, _ diary: UUID) async throws -> (exists: Bool, closed: Bool, purgeAt: Date?) {
        let rows = try await api.asSuperuser("select closed_at is not null as closed, purge_at from diaries where id = \(diary)")
        guard let row = rows.first else { return (false, false, nil) }
        return (true, try row.decode("closed"), try row.decode("purge_at"))
    }

    static func worker(_ pool: PostgresPool, _ api: APIHarness, window: Duration = .seconds(30 * 86_400)) -> ClosedDiaryWorker {
        ClosedDiaryWorker(pool: pool, listenConfiguration: api.database, options: ClosedDiaryWorker.Options(window: window), purged: {}, logger: Logger(label: "test"))
    }

    static func leave(_ api: APIHarness, _ diary: UUID, _ session: Session) async throws {
        #expect(try await api.call(.delete, "/v1/diaries/\(diary)/members/\(session.user.id)", token: session.accessToken).status == .noContent)
    }

    @Test("the last member's leave closes the diary: nothing is deleted, nobody sees it, its invite code names nothing")
    func lastLeaveCloses() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let photo = try await EntryPhotoTests.upload(api, couple.alice)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                       body: CreateEntryRequest(content: "アリスの日記", photoIds: [photo.id])).status == .created)
            #expect(try await api.post("ボブの日記", in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)
            #expect(try await Self.closedState(api, couple.diary.id).closed == false, "one member is left")
            try await Self.leave(api, couple.diary.id, couple.alice)

            let state = try await Self.closedState(api, couple.diary.id)
            #expect(state.exists && state.closed)
            let kept = try await api.asSuperuser("""
                select (select count(*) from entries where diary_id = \(couple.diary.id))::int as entries,
                       (select count(*) from entry_photos where diary_id = \(couple.diary.id))::int as photos,
                       (select count(*) from former_members where diary_id = \(couple.diary.id))::int as former
                """)
            #expect(try kept.first?.decode("entries", as: Int.self) == 2)
            #expect(try kept.first?.decode("photos", as: Int.self) == 1)
            #expect(try kept.first?.decode("former", as: Int.self) == 2)

            // Nobody sees it, and its code joins nobody: only its former members may bring it back.
            #expect(try await api.call(.get, "/v1/diaries/\(couple.diary.id)", token: couple.alice.accessToken).status == .notFound)
            let stranger = try await api.signIn("Mallory")
            let join = try await api.join(couple.diary.inviteCode, token: stranger.accessToken)
            #expect(join.status == .notFound && join.code == "invite_code_invalid")
        }
    }

    @Test("a former member restores a closed diary as its owner, with every entry; others get 404, and an open diary 409")
    func restore() async throws {
        try await APIHarness.run { api in
            let family = try await api.signIn("Mother")
            let child = try await api.signIn("Child")
            let stranger = try await api.signIn("Mallory")
            let diary = try await api.createDiary("家族", type: .family, token: family.accessToken)
            #expect(try await api.join(diary.inviteCode, token: child.accessToken).status == .ok)
            #expect(try await api.post("母より", in: diary.id, token: family.accessToken).status == .created)
            #expect(try await api.post("子より", in: diary.id, token: child.accessToken).status == .created)

            try await Self.leave(api, diary.id, child)
            let whileOpen = try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: child.accessToken)
            #expect(whileOpen.status == .conflict && whileOpen.code == "conflict", "an open diary is joined, not restored")
            try await Self.leave(api, diary.id, family)

            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: stranger.accessToken).status == .notFound)
            #expect(try await api.call(.post, "/v1/diaries/\(UUID())/restore", token: child.accessToken).status == .notFound)

            let restored = try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: child.accessToken)
            #expect(restored.status == .ok, "\(restored.text)")
            let answer = try restored.decode(Diary.self)
            #expect(answer.id == diary.id && answer.role == .owner && answer.memberCount == 1 && answer.name == "家族")
            let page = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: child.accessToken).decode(EntryPage.self)
            #expect(Set(page.entries.map(\.content)) == ["母より", "子より"])
            #expect(try await Self.closedState(api, diary.id).closed == false)

            // Open again: the other former member joins it as anyone does, and the code works again.
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: family.accessToken).status == .conflict)
            #expect(try await api.join(answer.inviteCode, token: family.accessToken).status == .ok)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: child.accessToken).status == .notFound, "a member is no former member")
        }
    }

    @Test("a member the owner removed keeps their own entries for the window but may not restore; a departure keeps the name it had")
    func removedMemberMayNotRestore() async throws {
        try await APIHarness.run { api in
            let mother = try await api.signIn("Mother")
            let child = try await api.signIn("Child")
            let diary = try await api.createDiary("家族", type: .family, token: mother.accessToken)
            #expect(try await api.join(diary.inviteCode, token: child.accessToken).status == .ok)
            #expect(try await api.post("子より", in: diary.id, token: child.accessToken).status == .created)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(child.user.id)", token: mother.accessToken).status == .noContent)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)", token: mother.accessToken, json: #"{"name":"母の日記"}"#).status == .ok)
            try await Self.leave(api, diary.id, mother)

            let childs = try await api.call(.get, "/v1/data-safety", token: child.accessToken).decode(DataSafety.self).departures
            #expect(childs.map(\.name) == ["家族"], "the name it had when they left, not the later one")
            #expect(childs.first?.closedAt != nil && childs.first?.restorable == false && childs.first?.ownEntries == 1)
            let mothers = try await api.call(.get, "/v1/data-safety", token: mother.accessToken).decode(DataSafety.self).departures
            #expect(mothers.map(\.name) == ["母の日記"] && mothers.first?.restorable == true)

            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: child.accessToken).status == .notFound)
            let export = try await DiaryExportTests.unpack(try await api.call(.get, "/v1/me/export", token: child.accessToken))
            #expect(try export.decode([PersonalExportedEntry].self, "entries.json").map(\.content) == ["子より"])
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: mother.accessToken).status == .ok)
        }
    }

    @Test("the account of a closed diary's last former member deleted: the diary goes with it, nobody being left to restore it")
    func lastFormerAccountDeleted() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("アリスの日記", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)
            try await Self.leave(api, couple.diary.id, couple.alice)
            #expect(try await api.call(.delete, "/v1/me", token: couple.bob.accessToken).status == .noContent)
            #expect(try await Self.closedState(api, couple.diary.id).closed, "Alice may still restore it")
            #expect(try await api.call(.delete, "/v1/me", token: couple.alice.accessToken).status == .noContent)
            #expect(try await Self.closedState(api, couple.diary.id).exists == false)
            let left = try await api.asSuperuser("select count(*)::int as n from entries where diary_id = \(couple.diary.id)")
            #expect(try left.first?.decode("n", as: Int.self) == 0)
        }
    }

    @Test("a join waiting on the diary's lock while the last member's leave closes it is refused as an invalid code")
    func joinRacingTheLastLeave() async throws {
        try await APIHarness.run { api in
            let owner = try await api.signIn("Owner")
            let joiner = try await api.signIn("Joiner")
            let diary = try await api.createDiary("ふたり", type: .couple, token: owner.accessToken)
            // The leave's transaction, held open: the diary closed and its row locked, not yet committed.
            let join = try await TestDatabase.withPool(api.database, size: 1) { leave in
                try await leave.withTransaction { connection in
                    try await connection.query("update diaries set closed_at = now() where id = \(diary.id)")
                    let join = Task { try await api.join(diary.inviteCode, token: joiner.accessToken) }
                    try await CounterTests.waitForLockWait("the join to wait on the diary's row", api, statement: "%join_diary%")
                    return join
                }
            }
            let reply = try await join.value
            #expect(reply.status == .notFound && reply.code == "invite_code_invalid", "\(reply.status) \(reply.text)")
            let members = try await api.asSuperuser("select count(*)::int as n from diary_members where diary_id = \(diary.id)")
            #expect(try members.first?.decode("n", as: Int.self) == 1, "nobody joined the closed diary")
        }
    }

    @Test("the worker sets the deletion date and tells every former member by push; past it the diary is deleted and its photos queued for the sweep")
    func workerSchedulesAndPurges() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let token = String(repeating: "cd", count: 32)
            #expect(try await api.call(.put, "/v1/me/devices/\(token)", token: couple.bob.accessToken, json: #"{"environment":"sandbox"}"#).status.code < 300)
            let photo = try await EntryPhotoTests.upload(api, couple.alice)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                       body: CreateEntryRequest(content: "写真", photoIds: [photo.id])).status == .created)
            let hash = try #require(try await api.asSuperuser("select content_hash from entry_photos where diary_id = \(couple.diary.id)").first?.decode("content_hash", as: String.self))
            try await Self.leave(api, couple.diary.id, couple.bob)
            try await Self.leave(api, couple.diary.id, couple.alice)

            // The server's own worker hears the close (NOTIFY closed_diaries) and sets the date.
            try await waitUntil { try await Self.closedState(api, couple.diary.id).purgeAt != nil }
            try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { pool in
                let worker = Self.worker(pool, api)
                let state = try await Self.closedState(api, couple.diary.id)
                let purgeAt = try #require(state.purgeAt)
                #expect(purgeAt.timeIntervalSinceNow > 29 * 86_400 && purgeAt.timeIntervalSinceNow < 31 * 86_400)
                #expect(try await worker.round() == ClosedDiaryWorker.Round(), "scheduled once, by the server's worker")

                let pushes = try await api.asSuperuser("select user_id, payload::text as payload from push_outbox where kind = 'diary_closed'")
                #expect(pushes.count == 1, "Bob's one device; Alice has none")
                #expect(try pushes.first?.decode("user_id", as: UUID.self) == couple.bob.user.id)
                let payload = try #require(try pushes.first?.decode("payload", as: String.self))
                #expect(payload.contains("ふたり") && payload.contains("削除されます") && payload.contains(couple.diary.id.canonicalText))

                // The Data Safety Center says the same date.
                let safety = try await api.call(.get, "/v1/data-safety", token: couple.alice.accessToken).decode(DataSafety.self)
                let departure = try #require(safety.departures.first)
                #expect(safety.departures.count == 1 && departure.diaryId == couple.diary.id && departure.closedAt != nil && departure.ownEntries == 1)
                #expect(abs(departure.keptUntil.timeIntervalSince(purgeAt)) < 1 && safety.departureWindowDays == 30)

                // Past the date: a restore is refused even before the worker runs, then the diary goes.
                try await api.asSuperuser("update diaries set purge_at = now() - interval '1 second' where id = \(couple.diary.id)")
                #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/restore", token: couple.alice.accessToken).status == .notFound)
                let second = try await worker.round()
                #expect(second.purged == [couple.diary.id])
                #expect(try await Self.closedState(api, couple.diary.id).exists == false)
                let garbage = try await api.asSuperuser("select count(*)::int as n from photo_garbage where content_hash = \(hash)")
                #expect(try garbage.first?.decode("n", as: Int.self) == 1)
                let former = try await api.asSuperuser("select count(*)::int as n from former_members where diary_id = \(couple.diary.id)")
                #expect(try former.first?.decode("n", as: Int.self) == 0)
                let history = try await api.asSuperuser("select count(*)::int as n from change_log where diary_id = \(couple.diary.id)")
                #expect(try history.first?.decode("n", as: Int.self) == 0, "a purged diary leaves no change behind")
                #expect(try await api.call(.get, "/v1/data-safety", token: couple.alice.accessToken).decode(DataSafety.self).departures.isEmpty)
            }
        }
    }

    @Test("a departure from an open diary is forgotten once its window has passed")
    func departuresPruned() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("ボブの日記", in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)
            let safety = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self)
            #expect(safety.departures.map(\.diaryId) == [couple.diary.id] && safety.departures.first?.closedAt == nil)
            try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { pool in
                #expect(try await Self.worker(pool, api).round().pruned == 0)
                try await api.asSuperuser("update former_members set left_at = now() - interval '31 days' where diary_id = \(couple.diary.id)")
                #expect(try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self).departures.isEmpty)
                #expect(try await Self.worker(pool, api).round().pruned == 1)
            }
        }
    }

    @Test("a former member's personal export carries their own entries and photos of diaries they left, open or closed, and nobody else's")
    func personalExportOfDepartures() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let photo = try await EntryPhotoTests.upload(api, couple.bob)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.bob.accessToken,
                                       body: CreateEntryRequest(content: "ボブの写真", photoIds: [photo.id])).status == .created)
            #expect(try await api.post("アリスの日記", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            let other = try await api.createDiary("ひとりの", type: .friends, token: couple.bob.accessToken)
            #expect(try await api.post("残る日記", in: other.id, token: couple.bob.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)

            for closed in [false, true] {
                if closed { try await Self.leave(api, couple.diary.id, couple.alice) }
                let reply = try await api.call(.get, "/v1/me/export", token: couple.bob.accessToken)
                #expect(reply.status == .ok)
                let unpacked = try await DiaryExportTests.unpack(reply)
                let entries = try unpacked.decode([PersonalExportedEntry].self, "entries.json")
                #expect(Set(entries.map(\.content)) == ["ボブの写真", "残る日記"], "closed: \(closed)")
                let departed = try #require(entries.first { $0.content == "ボブの写真" })
                #expect(departed.diaryId == couple.diary.id && departed.photos == ["photos/\(photo.id.canonicalText).jpg"])
                #expect(FileManager.default.fileExists(atPath: unpacked.folder.appendingPathComponent(departed.photos[0]).path))
                let departures = try unpacked.decode([Departure].self, "departures.json")
                #expect(departures.map(\.diaryId) == [couple.diary.id] && (departures.first?.closedAt != nil) == closed)
                #expect(!String(decoding: try unpacked.data("entries.json"), as: UTF8.self).contains("アリスの日記"))
            }

            // Past the window the departure no longer carries anything.
            try await api.asSuperuser("update diaries set purge_at = now() - interval '1 second' where id = \(couple.diary.id)")
            let late = try await DiaryExportTests.unpack(try await api.call(.get, "/v1/me/export", token: couple.bob.accessToken))
            #expect(try late.decode([PersonalExportedEntry].self, "entries.json").map(\.content) == ["残る日記"])
        }
    }

    @Test("an account deleted last closes a diary that has former members, and leaves none of its own rights behind")
    func accountDeletionCloses() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("ボブの日記", in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            #expect(try await api.post("アリスの日記", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)
            #expect(try await api.call(.delete, "/v1/me", token: couple.alice.accessToken).status == .noContent)

            #expect(try await Self.closedState(api, couple.diary.id).closed)
            let rows = try await api.asSuperuser("""
                select (select count(*) from entries where diary_id = \(couple.diary.id))::int as entries,
                       (select array_agg(user_id) from former_members where diary_id = \(couple.diary.id)) as former
                """)
            #expect(try rows.first?.decode("entries", as: Int.self) == 1, "her entries went with her account; his stay")
            #expect(try rows.first?.decodeAggregate("former", as: UUID.self) == [couple.bob.user.id])
            let restored = try await api.call(.post, "/v1/diaries/\(couple.diary.id)/restore", token: couple.bob.accessToken)
            #expect(restored.status == .ok)
            #expect(try restored.decode(Diary.self).memberCount == 1)
        }
    }

    @Test("with a window of seconds, a purge is seen from outside: the Data Safety Center lists the closed diary, then nothing, a restore is 404, and nothing of it is left")
    func purgeSeenFromOutside() async throws {
        let closedDiaries = ClosedDiaryConfiguration(window: .seconds(2), round: .milliseconds(200))
        try await APIHarness.run(closedDiaries: closedDiaries) { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("ボブの日記", in: couple.diary.id, token: couple.bob.accessToken).status == .created)
            try await Self.leave(api, couple.diary.id, couple.bob)
            try await Self.leave(api, couple.diary.id, couple.alice)
            // Listed while its two seconds last (on a loaded machine they may have passed already).
            let listed = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self)
            #expect((listed.departures.isEmpty || listed.departures.map(\.diaryId) == [couple.diary.id]) && listed.departureWindowDays == 1)
            try await waitUntil("the closed diary is purged", within: .seconds(30)) {
                let listed = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self).departures
                let exists = try await Self.closedState(api, couple.diary.id).exists
                return listed.isEmpty && !exists
            }
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/restore", token: couple.bob.accessToken).status == .notFound)
            let left = try await api.asSuperuser("""
                select (select count(*) from entries where diary_id = \(couple.diary.id))::int + (select count(*) from change_log where diary_id = \(couple.diary.id))::int
                    + (select count(*) from former_members where diary_id = \(couple.diary.id))::int as n
                """)
            #expect(try left.first?.decode("n", as: Int.self) == 0)
        }
    }

    @Test("the window's settings: days by default, seconds outside production only, and the worker's round")
    func windowSettings() throws {
        let defaults = try ClosedDiaryConfiguration.fromEnvironment(production: false, [:])
        #expect(defaults.window == .seconds(30 * 86_400) && defaults.round == .seconds(600) && defaults.windowDays == 30)
        let short = try ClosedDiaryConfiguration.fromEnvironment(production: false, ["CLOSED_DIARY_RETENTION_SECONDS": "5", "CLOSED_DIARY_ROUND_SECONDS": "1"])
        #expect(short.window == .seconds(5) && short.round == .seconds(1) && short.windowDays == 1)
        #expect(try ClosedDiaryConfiguration.fromEnvironment(production: true, ["CLOSED_DIARY_RETENTION_DAYS": "7"]).window == .seconds(7 * 86_400))
        #expect(throws: (any Error).self) { try ClosedDiaryConfiguration.fromEnvironment(production: true, ["CLOSED_DIARY_RETENTION_SECONDS": "5"]) }
        #expect(throws: (any Error).self) { try ClosedDiaryConfiguration.fromEnvironment(production: false, ["CLOSED_DIARY_ROUND_SECONDS": "0"]) }
    }
}
