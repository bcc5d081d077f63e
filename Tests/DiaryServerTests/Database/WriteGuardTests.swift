import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

/// The writes whose side effects live in a function are refused on every other path, even
/// the owner's psql, which bypasses row-level security: else a bulk statement there would
/// leave the counters, the change log, the reminders or the photo garbage behind.
@Suite("Writes only through the functions that keep their side effects")
struct WriteGuardTests {
    @Test("each guarded write, made directly as the schema's owner, is refused with 42501 and changes nothing")
    func directWritesRefused() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("guard-alice"), bob = try await api.signIn("guard-bob")
            let diary = try await api.createDiary("守り", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let attached = try await EntryPhotoTests.upload(api, alice), loose = try await EntryPhotoTests.upload(api, alice, width: 24)
            let entry = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken,
                                           body: CreateEntryRequest(content: "消せない", photoIds: [attached.id])).decode(Entry.self)
            let writes: [PostgresQuery] = [
                "insert into users (display_name) values ('direct')",
                "update users set settings = settings || '{\"notification_reminder\": false}' where id = \(alice.user.id)",
                "update users set time_zone = 'America/New_York' where id = \(alice.user.id)",
                "delete from users where id = \(bob.user.id)",
                "insert into diaries (name, type) values ('direct', 'couple')",
                "update diaries set name = 'direct' where id = \(diary.id)",
                "delete from diaries where id = \(diary.id)",
                "insert into diary_members (diary_id, user_id) values (\(diary.id), \(UUID()))",
                "update diary_members set role = case role when 'owner' then 'member' else 'owner' end where diary_id = \(diary.id)",
                "delete from diary_members where diary_id = \(diary.id) and user_id = \(bob.user.id)",
                "update entries set content = 'direct' where diary_id = \(diary.id)",
                "delete from entries where diary_id = \(diary.id)",
                "delete from entry_photos where diary_id = \(diary.id)",
                "delete from photo_uploads where id = \(loose.id)",
            ]
            let before = try await Self.state(of: diary.id, api)
            for write in writes {
                let refused = await #expect(throws: PostgresError.self, "\(write.sql)") { try await api.asSuperuser(write) }
                #expect(refused?.sqlState == SQLState("42501"), "\(write.sql): \(refused.map { "\($0)" } ?? "")")
            }
            #expect(try await Self.state(of: diary.id, api) == before)
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: bob.accessToken).status == .ok)
        }
    }

    @Test("a statement the policies leave with no rows is not refused: the guards are on rows, so a stranger's write still changes nothing, quietly")
    func strangersWriteNothing() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("quiet-alice"), mallory = try await api.signIn("quiet-mallory")
            let diary = try await api.createDiary("静か", type: .couple, token: alice.accessToken)
            _ = try await api.post("見えない", in: diary.id, token: alice.accessToken)
            // The server's own pool, as diary_app, under row-level security.
            let results = try await api.pool.transaction([
                Seed.identity(mallory.user.id), "select refresh_app_diary_ids()",
                "update diaries set name = 'taken' where id = \(diary.id) returning 1",
                "delete from entries where diary_id = \(diary.id) returning 1",
            ])
            #expect(results[2].isEmpty && results[3].isEmpty)
        }
    }

    /// The diary's row, members and entries, as text: what a refused write must leave alone.
    static func state(of diary: UUID, _ api: APIHarness) async throws -> String {
        let rows = try await api.asSuperuser("""
            select (select row_to_json(d)::text from diaries d where d.id = \(diary))
                || (select json_agg(m order by m.user_id)::text from diary_members m where m.diary_id = \(diary))
                || (select json_agg(e order by e.id)::text from entries e where e.diary_id = \(diary))
                || (select json_agg(p order by p.id)::text from entry_photos p where p.diary_id = \(diary))
                || (select count(*)::text from photo_uploads) || (select count(*)::text from users) as state
            """)
        return try rows.first?.decode("state", as: String.self) ?? ""
    }
}
