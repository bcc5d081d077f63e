import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// `GET /v1/diaries/{id}/calendar`: days in the caller's zone, month edges, aliases.
@Suite("Diary calendar")
struct CalendarTests {
    static func entry(_ api: APIHarness, _ diary: UUID, by user: UUID, at instant: String) async throws {
        try await api.asSuperuser("""
            select post_entry_as(\(user), \(diary), gen_random_uuid(), 'x', created_at => \(instant)::timestamptz)
            """)
    }

    static func calendar(_ api: APIHarness, _ diary: UUID, _ month: String, token: String) async throws -> APIHarness.Reply {
        try await api.call(.get, "/v1/diaries/\(diary)/calendar?month=\(month)", token: token)
    }

    @Test("days are the caller's: Tokyo (UTC+9) and Los Angeles (UTC−8) see the same instants on different days, month edges included")
    func timeZones() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.call(.patch, "/v1/me", token: couple.alice.accessToken, json: #"{"timeZone":"Asia/Tokyo"}"#).status == .ok)
            #expect(try await api.call(.patch, "/v1/me", token: couple.bob.accessToken, json: #"{"timeZone":"America/Los_Angeles"}"#).status == .ok)
            let diary = couple.diary.id
            // 2026-10-31T16:00Z: Tokyo's 11-01 01:00, LA's 10-31 09:00.
            try await Self.entry(api, diary, by: couple.alice.user.id, at: "2026-10-31T16:00:00Z")
            // 2026-11-03T16:30Z: Tokyo's 11-04, LA's 11-03.
            try await Self.entry(api, diary, by: couple.alice.user.id, at: "2026-11-03T16:30:00Z")
            try await Self.entry(api, diary, by: couple.bob.user.id, at: "2026-11-03T20:00:00Z")
            // 2026-12-01T07:30Z: Tokyo's 12-01, LA's 11-30 23:30.
            try await Self.entry(api, diary, by: couple.bob.user.id, at: "2026-12-01T07:30:00Z")

            let tokyo = try await Self.calendar(api, diary, "2026-11", token: couple.alice.accessToken).decode(DiaryCalendar.self)
            #expect(tokyo.month == "2026-11")
            #expect(tokyo.days.map(\.date) == ["2026-11-01", "2026-11-04"])
            #expect(tokyo.days.map(\.entries) == [1, 2])
            #expect(Set(tokyo.days[1].authorIds) == [couple.alice.user.id, couple.bob.user.id])

            let losAngeles = try await Self.calendar(api, diary, "2026-11", token: couple.bob.accessToken).decode(DiaryCalendar.self)
            #expect(losAngeles.days.map(\.date) == ["2026-11-03", "2026-11-30"])
            #expect(losAngeles.days.map(\.entries) == [2, 1])
            let october = try await Self.calendar(api, diary, "2026-10", token: couple.bob.accessToken).decode(DiaryCalendar.self)
            #expect(october.days.map(\.date) == ["2026-10-31"])
            #expect(try await Self.calendar(api, diary, "2026-12", token: couple.alice.accessToken).decode(DiaryCalendar.self).days.map(\.date) == ["2026-12-01"])
        }
    }

    @Test("an anonymous diary lists aliases; a malformed or out-of-range month is 400; a non-member gets 404")
    func aliasesAndRefusals() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let bob = try await api.signIn("Bob")
            let diary = try await api.createDiary("ひみつ", type: .anonymous, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            #expect(try await api.post("だれ", in: diary.id, token: alice.accessToken).status == .created)
            let entries = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: bob.accessToken).decode(EntryPage.self).entries
            let month = String(PostgresTimestamp.format(entries[0].createdAt).prefix(7))
            let seen = try await Self.calendar(api, diary.id, month, token: bob.accessToken).decode(DiaryCalendar.self)
            let authors = seen.days.flatMap(\.authorIds)
            #expect(authors == [entries[0].author.id] && authors != [alice.user.id])

            for bad in ["2026-13", "1899-12", "10000-01", "2026-1", "2026-00", "", "2026-11-01", "２０２６-11"] {
                let reply = try await Self.calendar(api, diary.id, bad.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? bad, token: bob.accessToken)
                #expect(reply.status == .badRequest && reply.code == "validation_failed", "\(bad)")
            }
            #expect(try await Self.calendar(api, diary.id, "9999-12", token: bob.accessToken).status == .ok)
            #expect(try await Self.calendar(api, diary.id, "1900-01", token: bob.accessToken).status == .ok)
            let stranger = try await api.signIn("Mallory")
            #expect(try await Self.calendar(api, diary.id, "2026-11", token: stranger.accessToken).status == .notFound)
        }
    }
}
